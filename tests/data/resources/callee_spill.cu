// Source of the ptxas_callee_spill_sm90a.log fixture: the spills happen in a
// non-inlined device function, which ptxas reports in its own "Function
// properties" block after the entry's; the entry itself shows only a few
// bytes.  Captured from the repository root with
//   nvcc -gencode=arch=compute_90a,code=sm_90a -cubin -Xptxas -v \
//        tests/data/resources/callee_spill.cu -o /tmp/callee_spill.cubin
#define FG_LIVE 96

__device__ __noinline__ float heavy(const float *__restrict__ in, int t, int n)
{
    float acc[FG_LIVE];
#pragma unroll
    for (int i = 0; i < FG_LIVE; i++)
        acc[i] = in[t + i * n];
#pragma unroll 1
    for (int r = 0; r < 8; r++) {
#pragma unroll
        for (int i = 0; i < FG_LIVE; i++)
            acc[i] = acc[i] * acc[(i + 1) % FG_LIVE] + in[t + (i + r) * n];
    }
    float s = 0.f;
#pragma unroll
    for (int i = 0; i < FG_LIVE; i++)
        s += acc[i];
    return s;
}

extern "C" __global__ void __launch_bounds__(1024, 2) caller(const float *in, float *out, int n)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    out[t] = heavy(in, t, n);
}
