/* The interface between the emulated overlap GEMM (gemm_kernel.cpp: the
 * generated .hip source of overlap_gemm_portable.in with the HIP shim) and its
 * test (gemm_emu.cpp, with the double reference): plain types only. */
#ifndef FG_EMU_GEMM_H
#define FG_EMU_GEMM_H

#ifdef __cplusplus
extern "C" {
#endif

typedef struct emu_gemm_dims {
    const char *name;
    int f16;   /* storage type: 1 f16, 0 bf16 */
    int n, k, bm, bn, bk, group_m, xcds, grid, threads;
} emu_gemm_dims;

extern const emu_gemm_dims emu_gemm;

/* The kernel's LDS placement (lds_at): the 16-byte unit that vector c of
 * row `row` of a block's A or W takes in its buffer. */
int emu_gemm_lds_at(int row, int c);

/* The kernel's last-round split over K (rounds_of): the pieces each tile of
 * the last round of `tiles` tiles on `grid` workgroups is taken in (1:
 * whole), and how many of its counters a launch left above zero. */
int emu_gemm_split(int tiles, int grid);
int emu_gemm_split_counters_left(void);

/* The kernel's parameters after m_rows (overlap_gemm_portable.in's feed
 * and drain, fg_overlap_gemm_args): flags NULL for an unfed launch, done
 * NULL for an undrained one. */
typedef struct emu_gemm_feed {
    const int *tile_rows;
    const unsigned *flags, *epoch;
    int own, shard_rows, piece_rows, flag_stride;
    unsigned *status;
    unsigned long long limit_ns;
    unsigned *done;
    int done_rows;
} emu_gemm_feed;

/* One launch of `grid` workgroups (one after another): C[m_rows, n] =
 * A[m_rows, k] . W[n, k]^T, storage type in and out; feed NULL: unfed.
 * late (NULL or [grid]): each workgroup's own FG_GEMM_LATE report (the
 * status word is taken and cleared after each workgroup's thread 0 returns,
 * and holds their OR at the end). */
void emu_gemm_launch(const void *a, const void *w, void *c, int m_rows, int grid,
                     const emu_gemm_feed *feed, unsigned *late);

/* hook(flag, workgroup, ctx) before each of the kernel's flag polls (its
 * system-scope acquire loads), on the polling thread: it may land rows and
 * set their flag mid-wait.  NULL: none. */
void emu_gemm_on_poll(void (*hook)(const unsigned *flag, int workgroup, void *ctx), void *ctx);

#ifdef __cplusplus
}
#endif
#endif
