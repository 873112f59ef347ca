/* Status strings, the per-thread failure detail, enum names. */
#include <stdarg.h>
#include <stdio.h>

#include "internal.h"

/* Per thread, like errno: concurrent binds and launches do not mix details. */
static _Thread_local char last_error[512];

fg_status fg_fail(fg_status s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return s;
}

const char *fg_last_error(void)
{
    return last_error;
}

const char *fg_status_string(fg_status s)
{
    switch (s) {
    case FG_OK: return "success";
    case FG_ERR_INVALID_ARGUMENT: return "invalid argument";
    case FG_ERR_NULL_POINTER: return "a device buffer argument is NULL";
    case FG_ERR_MISALIGNED: return "a device buffer is not aligned as the kernel requires";
    case FG_ERR_BAD_SHAPE: return "a dimension is out of the range the kernel can launch";
    case FG_ERR_NO_MATCHING_INSTANCE:
        return "no generated kernel instance serves this op, dtype and shape";
    case FG_ERR_NO_DEVICE: return "no GPU device (no driver library, or it found no device)";
    case FG_ERR_UNSUPPORTED_DEVICE:
        return "the device or driver is not one the generated kernels support";
    case FG_ERR_OCCUPANCY: return "the kernel cannot be resident on the device as launched";
    case FG_ERR_OUT_OF_MEMORY: return "out of memory";
    case FG_ERR_DRIVER: return "a GPU driver call failed";
    case FG_ERR_TIMEOUT: return "a wait on another GPU's work ran past its time limit";
    case FG_ERR_PEER_FAILED:
        return "another rank of the collective failed or gave up, so this call's outputs are undefined";
    }
    return "unknown status";
}

const char *fg_reg_arch_name(fg_reg_arch a)
{
    switch (a) {
    case FG_REG_ARCH_SM90A: return "sm_90a";
    case FG_REG_ARCH_GFX942: return "gfx942";
    case FG_REG_ARCH_GFX90A: return "gfx90a";
    }
    return "unknown arch";
}

const char *fg_reg_dtype_name(fg_reg_dtype d)
{
    switch (d) {
    case FG_REG_F16: return "f16";
    case FG_REG_BF16: return "bf16";
    }
    return "unknown dtype";
}

size_t fg_reg_dtype_bytes(fg_reg_dtype d)
{
    return d == FG_REG_F16 || d == FG_REG_BF16 ? 2 : 0;
}
