// Source of the ptxas_multi_sm90a.log fixture: several entries in one file
// (extern "C", C++-mangled, a template instance, one with a stack frame and a
// non-inlined callee), so the parser sees every shape of report ptxas 13.0
// prints.  Captured from the repository root with
//   nvcc -gencode=arch=compute_90a,code=sm_90a -cubin -Xptxas -v \
//        tests/data/resources/multi.cu -o /tmp/multi.cubin
extern "C" __global__ void plain_c(float *x, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        x[i] *= 2.f;
}

__global__ void mangled(float *x, const float *y, int n)
{
    __shared__ float s[256];
    int i = threadIdx.x;
    s[i] = y[i];
    __syncthreads();
    x[i] = s[255 - i] * n;
}

template <int N> __global__ void tmpl(float *x)
{
    float a[N];
    for (int i = 0; i < N; i++)
        a[i] = x[i * threadIdx.x];
    float s = 0;
    for (int i = 0; i < N; i++)
        s += a[(i * 7 + threadIdx.x) % N];
    x[threadIdx.x] = s;
}
template __global__ void tmpl<64>(float *);

__device__ __noinline__ float helper(float *p, int k)
{
    float a[32];
    for (int i = 0; i < 32; i++)
        a[i] = p[i * k];
    return a[k & 31];
}

extern "C" __global__ void calls(float *x) { x[threadIdx.x] = helper(x, threadIdx.x); }
