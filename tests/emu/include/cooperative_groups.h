// The host emulation's stand-in for CUDA's cooperative_groups.h: the
// cluster group of include/cuda_emu.h's clusters (its clusters along x).
#ifndef FG_EMU_COOPERATIVE_GROUPS_H
#define FG_EMU_COOPERATIVE_GROUPS_H

namespace cooperative_groups {
struct cluster_group {
    unsigned block_rank() const { return blockIdx.x % emu_clusters.size; }
    unsigned num_blocks() const { return emu_clusters.size; }
    void sync() const
    {
        cluster_arrive();
        cluster_wait();
    }
    template <class T> T *map_shared_rank(T *p, unsigned r) const { return emu_map_shared(p, r); }
};
inline cluster_group this_cluster() { return {}; }
}   // namespace cooperative_groups

#endif
