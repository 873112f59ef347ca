// The probes' mbarrier and bulk-copy helpers (the kernels' own are in
// templates/sm90.cu.in; a probe is one file nvcc builds alone).
#pragma once
#include <cstdint>

__device__ __forceinline__ unsigned smem_u32(const void *p) { return (unsigned)__cvta_generic_to_shared(p); }
__device__ __forceinline__ void mbar_init(uint64_t *b, unsigned n)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_u32(b)), "r"(n) : "memory");
}
__device__ __forceinline__ void mbar_expect(uint64_t *b, unsigned bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_u32(b)), "r"(bytes)
                 : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint64_t *b)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_u32(b)) : "memory");
}
// The phase of that parity complete; CLUSTER: acquiring at cluster scope
// (a peer's remote arrival, or its copies into this block)
template <bool CLUSTER = false> __device__ __forceinline__ void mbar_wait(uint64_t *b, unsigned parity)
{
    if (CLUSTER)
        asm volatile("{\n.reg .pred p;\nW: mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%0], %1;\n"
                     "@!p bra W;\n}\n" ::"r"(smem_u32(b)),
                     "r"(parity)
                     : "memory");
    else
        asm volatile("{\n.reg .pred p;\nW: mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n@!p bra W;\n}\n" ::"r"(
                         smem_u32(b)),
                     "r"(parity)
                     : "memory");
}
// bytes (a multiple of 16) from global to shared, completing on bar
__device__ __forceinline__ void bulk(void *dst, const void *src, unsigned bytes, uint64_t *bar)
{
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                     smem_u32(dst)),
                 "l"(src), "r"(bytes), "r"(smem_u32(bar))
                 : "memory");
}
