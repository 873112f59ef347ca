# How every generated kernel is compiled, for the project's own build
# (mk/kernels.mk) and for engines (fusegen.mk): one place for the flags.
# -Xptxas -v and kernel-resource-usage print the registers, shared memory and
# spills the resource gate reads.  The HIP device-library path is added by
# each includer (it lives in its build folder).  tests/gpu/gpu-env.sh, which
# runs without make on GPU machines, reads the nvcc line from here.
FUSEGEN_KERNEL_NVCC_FLAGS := -gencode=arch=compute_90a,code=sm_90a -cubin -O3 -Xptxas -v
FUSEGEN_KERNEL_HIP_FLAGS  := -x hip --rocm-path=/usr --offload-device-only --no-gpu-bundle-output \
                             -O3 -Rpass-analysis=kernel-resource-usage
