// The host emulation's stand-in for CUDA's cooperative_groups.h (the
// sm_90a kernels that include it name a cluster group whether or not they
// form clusters): clusters are not emulated, so each call but the group's
// own making traps (include/cuda_emu.h; the kernels' forms with clusters are
// left out of tests/emu).
#ifndef FG_EMU_COOPERATIVE_GROUPS_H
#define FG_EMU_COOPERATIVE_GROUPS_H

namespace cooperative_groups {
struct cluster_group {
    unsigned block_rank() const { emu_unsupported("cluster_group::block_rank"); }
    void sync() const { emu_unsupported("cluster_group::sync"); }
    template <class T> T *map_shared_rank(T *, unsigned) const { emu_unsupported("cluster_group::map_shared_rank"); }
};
inline cluster_group this_cluster() { return {}; }
}   // namespace cooperative_groups

#endif
