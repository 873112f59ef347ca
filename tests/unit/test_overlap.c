/* The overlap cost model (generator/plan_overlap.c) against hand-worked
 * numbers on a made-up target: 1 TFLOPS, 10 us per copy + bytes at half of
 * the two-way rate. */
#include <criterion/criterion.h>
#include <math.h>

#include "plan_overlap.h"

static fg_ceilings ceil_ = {.copy_gbps = 100, .read_gbps = 100, .matmul_bf16_tflops = 1};
static fg_interconnect ic_ = {.peer_copy_latency_us = 10, .peer_copy_gbps = 100,
                              .peer_copy_bidir_gbps = 200, .gemm_slowdown = 0.1};
static fg_target target_ = {.name = "made-up", .ceilings = &ceil_, .interconnect = &ic_};

static fg_overlap_prediction predict(fg_collective c, unsigned world, const fg_target *t)
{
    fg_gemm_shape s = {.name = "s", .collective = c, .m = 1000, .n = 1000, .k = 1000};
    fg_gemm g = {.name = "g", .world_size = world, .shapes = &s, .shapes_count = 1};
    fg_overlap_prediction p;
    const char *why = fg_overlap_predict(&g, &s, t, &p);
    cr_assert_null(why, "%s", why);
    return p;
}

#define NEAR(a, b) cr_assert(fabs((a) - (b)) < 1e-6, "%s = %.9g, expected %.9g", #a, a, b)

Test(overlap, small_copies_under_a_slowed_gemm_stay_serial)
{
    /* gemm(1000 rows) = 2e9 flop / 1e6 flop/us = 2000 us, half 1000 us (1100 under copies);
     * a shard or chunk of 500 x 1000 x 2 B = 1e6 B: 10 + 1e6 / 1e5 = 20 us */
    fg_overlap_prediction p = predict(FG_COLL_ALL_GATHER, 2, &target_);
    NEAR(p.gemm_us, 2000.0);
    NEAR(p.comm_us, 20.0);
    NEAR(p.us[FG_SCHED_SERIAL_CE], 2020.0);
    NEAR(p.us[FG_SCHED_SHARD_OVERLAP], 1000.0 + 1100.0);
    cr_assert_eq(p.chosen, FG_SCHED_SERIAL_CE, "never slower than serial");
    /* reduce-scatter adds the reduction: 3 chunks through 1e5 B/us = 30 us */
    p = predict(FG_COLL_REDUCE_SCATTER, 2, &target_);
    NEAR(p.us[FG_SCHED_SERIAL_CE], 2000.0 + 20.0 + 30.0);
    NEAR(p.us[FG_SCHED_SHARD_OVERLAP], 1000.0 + 1100.0 + 30.0);
    /* chunk_overlap's ring, pieces issued in pairs that share the GPU; 4 pieces of 125
     * rows: gemm 250 us, 275 under copies, plus 2.5e5 B of running sum read at 1e5 B/us
     * (2.5 us); the first step's pairs end at 550 and 1100 us, their copies (10 + 2.5 =
     * 12.5 us each) land long before the own block's pairs need them: 1100 + 2 x 555.
     * 2 pieces: the own pair starts when the first copy lands (1115) and shares the
     * GPU: 1115 + 2 x 555 = 2225 us */
    NEAR(p.us[FG_SCHED_CHUNK_OVERLAP], 2210.0);
    cr_assert_eq(p.chunks, 4);
    cr_assert_eq(p.chosen, FG_SCHED_SERIAL_CE);
}

Test(overlap, slow_links_overlap_shard_by_shard)
{
    fg_interconnect slow = ic_;
    slow.peer_copy_bidir_gbps = 2, slow.peer_copy_gbps = 1, slow.gemm_slowdown = 0;
    fg_target t = target_;
    t.interconnect = &slow;
    /* copy(1e6 B) = 10 + 1e6 / 1e3 = 1010 us */
    fg_overlap_prediction p = predict(FG_COLL_ALL_GATHER, 2, &t);
    NEAR(p.us[FG_SCHED_SERIAL_CE], 1010.0 + 2000.0);
    NEAR(p.us[FG_SCHED_SHARD_OVERLAP], 1000.0 + 1010.0);
    /* pieces: the own shard's GEMM (1000 us) paired with the peer's first piece, which
     * lands while it runs, then the rest in pairs as they land; 2 pieces: copies of
     * 510 us land at 510 and 1020, GEMMs of 500 us: 1500, then 2000; 4 pieces (260 us
     * each, GEMMs of 250 us) end at 2000 too: the first count wins */
    NEAR(p.us[FG_SCHED_CHUNK_OVERLAP], 2000.0);
    cr_assert_eq(p.chosen, FG_SCHED_CHUNK_OVERLAP);
    cr_assert_eq(p.chunks, 2);
    /* RS: shard overlap 1000 + max(1000, 1010) + 30 us of reduction; the ring with 4
     * pieces (GEMMs 250 us in pairs ending at 500 and 1000; copies of 260 us landing
     * at 760, 1020, 1280, 1540) runs the own pairs from 1000 us on, each 2 x 252.5 us:
     * 2010 us, where 2 pieces take 2525 (the own pair waits for the copies, 1510 and
     * 2020, and the second arrives too late to share) */
    p = predict(FG_COLL_REDUCE_SCATTER, 2, &t);
    NEAR(p.us[FG_SCHED_SHARD_OVERLAP], 1000.0 + 1010.0 + 30.0);
    NEAR(p.us[FG_SCHED_CHUNK_OVERLAP], 2010.0);
    cr_assert_eq(p.chunks, 4);
    cr_assert_eq(p.chosen, FG_SCHED_CHUNK_OVERLAP);
    /* four ranks: shards of 250 rows, copy(5e5 B) = 510 us, gemm(250) = 500 us */
    p = predict(FG_COLL_ALL_GATHER, 4, &t);
    NEAR(p.comm_us, 3 * 510.0);
    NEAR(p.us[FG_SCHED_SERIAL_CE], 3 * 510.0 + 2000.0);
    NEAR(p.us[FG_SCHED_SHARD_OVERLAP], 500.0 + 3 * 510.0);
}

Test(overlap, says_why_it_cannot_predict)
{
    fg_gemm_shape s = {.name = "s", .collective = FG_COLL_ALL_GATHER, .m = 8, .n = 8, .k = 8};
    fg_gemm g = {.name = "g", .world_size = 2, .shapes = &s, .shapes_count = 1};
    fg_overlap_prediction p;
    fg_target t = target_;
    t.interconnect = NULL;
    const char *why = fg_overlap_predict(&g, &s, &t, &p);
    cr_assert(why && strstr(why, "fusegen profile"), "%s", why);
    g.world_size = 1;
    why = fg_overlap_predict(&g, &s, &target_, &p);
    cr_assert(why && strstr(why, "world size of 1"), "%s", why);
}

/* A profiled GEMM time replaces the ceiling's for its exact shape only. */
Test(overlap, profiled_gemm_times_replace_the_ceiling)
{
    fg_gemm_time times[] = {{.m = 1000, .n = 1000, .k = 1000, .us = 3000},
                            {.m = 500, .n = 1000, .k = 1000, .us = 1600},
                            {.m = 250, .n = 1000, .k = 1000, .us = 800},
                            {.m = 125, .n = 1000, .k = 1000, .us = 400}};
    fg_interconnect prof = ic_;
    prof.gemm_times = times, prof.gemm_times_count = 4;
    fg_target t = target_;
    t.interconnect = &prof;
    fg_overlap_prediction p = predict(FG_COLL_ALL_GATHER, 2, &t);
    cr_assert(p.gemms_measured);
    NEAR(p.gemm_us, 3000.0);
    NEAR(p.us[FG_SCHED_SERIAL_CE], 3000.0 + 20.0);
    NEAR(p.us[FG_SCHED_SHARD_OVERLAP], 1600.0 + 1600.0 * 1.1);
    /* the half-size GEMM not profiled: it runs at the ceiling, and the prediction says so */
    prof.gemm_times_count = 1;
    p = predict(FG_COLL_ALL_GATHER, 2, &t);
    cr_assert_not(p.gemms_measured);
    NEAR(p.us[FG_SCHED_SHARD_OVERLAP], 1000.0 + 1100.0);
}

/* The executor's fixed cost per call adds to every copy-engine schedule. */
Test(overlap, the_call_overhead_adds_to_each_schedule)
{
    fg_interconnect fixed = ic_;
    fixed.call_overhead_us = 25;
    fg_target t = target_;
    t.interconnect = &fixed;
    const fg_overlap_prediction p = predict(FG_COLL_ALL_GATHER, 2, &t);
    NEAR(p.us[FG_SCHED_SERIAL_CE], 2020.0 + 25.0);
    NEAR(p.us[FG_SCHED_SHARD_OVERLAP], 1000.0 + 1100.0 + 25.0);
}

/* Serial NCCL: the GEMM plus NCCL's fitted collective; not predicted (NaN,
 * never chosen) without the profile's NCCL fit. */
Test(overlap, serial_nccl_from_the_profiles_fit)
{
    fg_overlap_prediction p = predict(FG_COLL_ALL_GATHER, 2, &target_);
    cr_assert(isnan(p.us[FG_SCHED_SERIAL_NCCL]));
    cr_assert_neq(p.chosen, FG_SCHED_SERIAL_NCCL);
    fg_interconnect nccl = ic_;
    nccl.nccl_ag_latency_us = 5, nccl.nccl_ag_gbps = 1000;    /* 1e6 B: 5 + 1 us */
    nccl.nccl_rs_latency_us = 50, nccl.nccl_rs_gbps = 100;    /* 1e6 B: 50 + 10 us */
    fg_target t = target_;
    t.interconnect = &nccl;
    p = predict(FG_COLL_ALL_GATHER, 2, &t);
    NEAR(p.us[FG_SCHED_SERIAL_NCCL], 2000.0 + 6.0);
    cr_assert_eq(p.chosen, FG_SCHED_SERIAL_NCCL, "faster than serial CE's 2020 us");
    p = predict(FG_COLL_REDUCE_SCATTER, 2, &t);
    NEAR(p.us[FG_SCHED_SERIAL_NCCL], 2000.0 + 60.0);
    cr_assert_eq(p.chosen, FG_SCHED_SERIAL_CE, "2050 us against NCCL's 2060");
    /* four ranks: three pieces of 5e5 B */
    p = predict(FG_COLL_ALL_GATHER, 4, &t);
    NEAR(p.us[FG_SCHED_SERIAL_NCCL], 2000.0 + 5.0 + 1.5);
}

/* chunk_fused (on sm_90a, whole tiles of the generated GEMM): the own
 * block at the whole GEMM's rate under copies, then each piece once landed;
 * predicted, never chosen; for RS only where its blocks are whole tile
 * rows; not for another arch, an sm_90a target without clusters (its GEMM
 * is the portable form, which the executor does not run) or a shape that is
 * no whole tiles.  m 1024 = 2 x 512, n 512, k 1024 at 1 TFLOPS:
 * gemm 1073.741824 us, 1.1 x that under copies; a piece of 512 / c rows x
 * 1024 x 2 B: 2 pieces of 10 + 2.62144 us each, landing long before the
 * own block (590.5580032 us) ends: it is all the GEMM, 1181.1160064 us, at
 * every piece count */
Test(overlap, chunk_fused_predicted_not_chosen)
{
    fg_gemm_shape s = {.name = "s", .collective = FG_COLL_ALL_GATHER, .m = 1024, .n = 512,
                       .k = 1024};
    fg_gemm g = {.name = "g", .world_size = 2, .shapes = &s, .shapes_count = 1};
    fg_target t = target_;
    t.arch = FG_ARCH_SM90A, t.max_cluster_size = 16;
    t.shared_mem_per_block = 232448;   /* an H200's: the fused GEMM is emitted */
    fg_overlap_prediction p;
    cr_assert_null(fg_overlap_predict(&g, &s, &t, &p));
    NEAR(p.us[FG_SCHED_CHUNK_FUSED], 1181.1160064);
    cr_assert_eq(p.fused_chunks, 2, "the fewest pieces on a tie");
    cr_assert_neq(p.chosen, FG_SCHED_CHUNK_FUSED);
    /* slow links (1e3 B/us a way): pieces of 512 / c rows land every 10 + 1048.576 / c
     * us; the GEMM takes 73.8197504 us for 64 rows.  8 pieces are best: the last lands at
     * 8 x 141.072 = 1128.576 us, then its rows: 1202.3957504 (4: 4 x 272.144 + 147.6395 =
     * 1236.215; 2: 2 x 534.288 + 295.279 = 1363.855) */
    fg_interconnect slow = ic_;
    slow.peer_copy_bidir_gbps = 2;
    t.interconnect = &slow;
    cr_assert_null(fg_overlap_predict(&g, &s, &t, &p));
    NEAR(p.us[FG_SCHED_CHUNK_FUSED], 1202.3957504);
    cr_assert_eq(p.fused_chunks, 8);
    slow.peer_copy_bidir_gbps = 1;   /* the copies lead further */
    cr_assert_null(fg_overlap_predict(&g, &s, &t, &p));
    cr_assert(p.us[FG_SCHED_CHUNK_FUSED] >= p.comm_us, "never under its copies");
    cr_assert_neq(p.chosen, FG_SCHED_CHUNK_FUSED);
    t.interconnect = &ic_;
    /* RS: pieces of 256 rows (2 chunks: 2 x 128) x 512 x 2 B = 2.62144e5 B, 12.62144 us a
     * copy; the peer's block's pieces written at 295.2790016 and 590.5580032 us, pushed by
     * 603.1794432; the GEMM ends at 1181.1160064, then the reduction: 3 blocks of 5.24288e5 B
     * at 1e5 B/us = 15.72864 us -> 1196.8446464 */
    s.collective = FG_COLL_REDUCE_SCATTER;
    cr_assert_null(fg_overlap_predict(&g, &s, &t, &p));
    NEAR(p.us[FG_SCHED_CHUNK_FUSED], 1196.8446464);
    cr_assert_eq(p.fused_chunks, 2);
    s.m = 768;   /* blocks of 384 rows: 2 pieces of 192 are no whole tiles */
    cr_assert_null(fg_overlap_predict(&g, &s, &t, &p));
    cr_assert(isnan(p.us[FG_SCHED_CHUNK_FUSED]), "RS pieces of whole tile rows only");
    s.m = 1024;
    s.collective = FG_COLL_ALL_GATHER, s.n = 500;
    cr_assert_null(fg_overlap_predict(&g, &s, &t, &p));
    cr_assert(isnan(p.us[FG_SCHED_CHUNK_FUSED]), "n not whole 256-column tiles");
    s.n = 512, t.arch = FG_ARCH_GFX942;
    cr_assert_null(fg_overlap_predict(&g, &s, &t, &p));
    cr_assert(isnan(p.us[FG_SCHED_CHUNK_FUSED]), "the fused GEMM's waits are sm_90a's");
    t.arch = FG_ARCH_SM90A, t.max_cluster_size = 0;
    cr_assert_null(fg_overlap_predict(&g, &s, &t, &p));
    cr_assert(isnan(p.us[FG_SCHED_CHUNK_FUSED]), "no clusters: the portable GEMM, not run");
    t.max_cluster_size = 16, t.shared_mem_per_block = 99 * 1024;   /* its stages do not fit */
    cr_assert_null(fg_overlap_predict(&g, &s, &t, &p));
    cr_assert(isnan(p.us[FG_SCHED_CHUNK_FUSED]), "no fused GEMM emitted for the target");
}

/* A copy lane a peer (the 2D order), 4 ranks, blocks of 300 rows: gemm(1200
 * rows) 2400 us, a block's 600 us (660 under copies); a shard or partial of
 * 6e5 B takes 10 + 6 us.  On a switch the three lanes share the rank's
 * links (the bytes one after the other, the latencies side by side); on a
 * full mesh each has its own; the profile's lanes fit replaces both. */
Test(overlap, a_lane_a_peer_overlaps_the_copies_latencies)
{
    fg_gemm_shape s = {.name = "s", .collective = FG_COLL_ALL_GATHER, .m = 1200, .n = 1000,
                       .k = 1000};
    fg_gemm g = {.name = "g", .world_size = 4, .topology = FG_TOPO_NVSWITCH, .shapes = &s,
                 .shapes_count = 1};
    fg_overlap_prediction p;
    cr_assert_null(fg_overlap_predict(&g, &s, &target_, &p));
    NEAR(p.us[FG_SCHED_SERIAL_CE], 2400.0 + 3 * 16.0);
    NEAR(p.lanes_us[FG_SCHED_SERIAL_CE], 2400.0 + 10.0 + 3 * 6.0);
    NEAR(p.lanes_us[FG_SCHED_SHARD_OVERLAP], 600.0 + 3 * 660.0);   /* GEMM-bound: level */
    cr_assert(!isnan(p.lanes_us[FG_SCHED_CHUNK_OVERLAP]));
    cr_assert(isnan(p.lanes_us[FG_SCHED_SERIAL_NCCL]));
    /* RS: the partials pushed once the GEMM ends (2400), each lane's latency beside the
     * others': 2410 + 6, + 6, + 6; the reduction 5 x 6e5 B at 1e5 B/us = 30 us */
    s.collective = FG_COLL_REDUCE_SCATTER;
    cr_assert_null(fg_overlap_predict(&g, &s, &target_, &p));
    NEAR(p.us[FG_SCHED_SERIAL_CE], 2400.0 + 3 * 16.0 + 30.0);
    NEAR(p.lanes_us[FG_SCHED_SERIAL_CE], 2428.0 + 30.0);
    cr_assert(isnan(p.lanes_us[FG_SCHED_CHUNK_OVERLAP]), "the ring takes one lane");
    /* a full mesh: every lane alone, all land after one copy */
    g.topology = FG_TOPO_FULL_MESH;
    cr_assert_null(fg_overlap_predict(&g, &s, &target_, &p));
    NEAR(p.lanes_us[FG_SCHED_SERIAL_CE], 2416.0 + 30.0);
    s.collective = FG_COLL_ALL_GATHER;
    cr_assert_null(fg_overlap_predict(&g, &s, &target_, &p));
    NEAR(p.lanes_us[FG_SCHED_SERIAL_CE], 2416.0);
    /* slow links (1e3 B/us a way: 610 us a copy): the peers' blocks land at 610, 1220,
     * 1830 us on one lane; on a lane each (full mesh) all at 610: 600 + 3 x 660 */
    fg_interconnect slow = ic_;
    slow.peer_copy_bidir_gbps = 2;
    fg_target t = target_;
    t.interconnect = &slow;
    cr_assert_null(fg_overlap_predict(&g, &s, &t, &p));
    NEAR(p.lanes_us[FG_SCHED_SHARD_OVERLAP], 610.0 + 3 * 660.0);
    NEAR(p.lanes_us[FG_SCHED_SERIAL_CE], 2400.0 + 610.0);
    /* the profile's lanes fit (every GPU pushing to every other at once) replaces the
     * assumption on any topology: a round of the 3 lanes pays 20 us once and the rank's
     * 3 x 6e5 B at 3e5 B/us; RS pushes once the GEMM ends, 2420 + 2 each behind the last */
    fg_interconnect fit = ic_;
    fit.copy_lanes_latency_us = 20, fit.copy_lanes_gbps = 300, fit.copy_lanes_gpus = 8;
    t.interconnect = &fit;
    cr_assert_null(fg_overlap_predict(&g, &s, &t, &p));
    NEAR(p.lanes_us[FG_SCHED_SERIAL_CE], 2400.0 + 20.0 + 3 * 2.0);
    NEAR(p.us[FG_SCHED_SERIAL_CE], 2400.0 + 3 * 16.0);   /* one lane: as before */
    s.collective = FG_COLL_REDUCE_SCATTER;
    cr_assert_null(fg_overlap_predict(&g, &s, &t, &p));
    NEAR(p.lanes_us[FG_SCHED_SERIAL_CE], 2426.0 + 30.0);
    s.collective = FG_COLL_ALL_GATHER;
    /* nothing on two ranks (one peer: the one-lane order), a ring, or past 9 ranks */
    g.topology = FG_TOPO_RING;
    cr_assert_null(fg_overlap_predict(&g, &s, &target_, &p));
    cr_assert(isnan(p.lanes_us[FG_SCHED_SERIAL_CE]), "a ring");
    g.topology = FG_TOPO_NVSWITCH, g.world_size = 2, s.m = 1000;
    cr_assert_null(fg_overlap_predict(&g, &s, &target_, &p));
    cr_assert(isnan(p.lanes_us[FG_SCHED_SHARD_OVERLAP]), "two ranks");
    g.world_size = 10, s.m = 1000;
    cr_assert_null(fg_overlap_predict(&g, &s, &target_, &p));
    cr_assert(isnan(p.lanes_us[FG_SCHED_SHARD_OVERLAP]), "9 lanes, past the runtime's 8");
}


/* The hierarchical plan, 4 ranks in 2 nodes of 2, blocks of 250 rows: a
 * block's GEMM 500 us, 550 under copies; a block 5e5 B.  NCCL across the
 * nodes at the profile's fit: AG 5 + 5e5 / 1e6 = 5.5 us, RS 50 + 5e5 / 1e5 =
 * 55 us.  Not predicted without that fit, nor where no node size of 2 or
 * more leaves 2 nodes. */
Test(overlap, the_hierarchical_plan_by_node_size)
{
    fg_interconnect x = ic_;
    x.nccl_ag_latency_us = 5, x.nccl_ag_gbps = 1000, x.nccl_rs_latency_us = 50, x.nccl_rs_gbps = 100;
    fg_target t = target_;
    t.interconnect = &x;
    /* RS node by node, the other node first: the other place's GEMM to 550 us, pushed
     * (10 + 5 us) to 565; the own place's to 1100, the node's sum (3 x 5e5 B at 1e5 B/us)
     * to 1115, sent to its owner by NCCL (the fit over 2 ranks: 55 us) to 1170 beside the
     * own node's GEMMs (1665, 2215); its sum to 2230, the last sum (3 blocks) to 2245 */
    fg_overlap_prediction p = predict(FG_COLL_REDUCE_SCATTER, 4, &t);
    cr_assert_eq(p.hier_count, 1);
    cr_assert_eq(p.hier_nodes[0], 2);
    NEAR(p.hier_us[0], 2245.0);
    /* AG on fast links is the four GEMMs back to back */
    p = predict(FG_COLL_ALL_GATHER, 4, &t);
    NEAR(p.hier_us[0], 4 * 550.0);
    /* slow links (2.5e2 B/us a way: 10 + 2000 us a copy): the own block to 550, NCCL's
     * block (there at 5.5 us) to 1100, the node peer's own block lands at 2010 (to 2560),
     * its forward of NCCL's block at 2010 + 2010 (to 4570) */
    x.peer_copy_bidir_gbps = 0.5;
    p = predict(FG_COLL_ALL_GATHER, 4, &t);
    NEAR(p.hier_us[0], 4570.0);
    /* RS on them: the first push lands at 2560, so the GPU runs the own node's other
     * place (1100 to 1650, pushed by 4570) while the sum waits; the sum 2560 to 2575
     * (NCCL's step to 2630), the own place's GEMM to 3125, its sum once the second push
     * landed, 4570 to 4585, the last sum to 4600 */
    p = predict(FG_COLL_REDUCE_SCATTER, 4, &t);
    NEAR(p.hier_us[0], 4600.0);
    /* the executor's fixed cost per call is paid once */
    x.call_overhead_us = 7;
    p = predict(FG_COLL_ALL_GATHER, 4, &t);
    NEAR(p.hier_us[0], 4577.0);
    /* 6 ranks in 3 nodes of 2 (blocks of 1000 / 6 rows: a GEMM 366.67 us under copies,
     * 333333 B, a push 13.33 us), fast links, NCCL's steps slow (5 + 333333 / 500 = 671.67
     * us each): the node peer's own block lands at 13.33, step 1's block at 671.67 and the
     * peer's forward of its own step 1's at 685, step 2's at 1343.33 and its forward at
     * 1356.67; the GPU never waits: own, the peer's, step 1's, the peer's step 1 forward
     * (step 2's is not there yet), step 2's, the last forward: 6 x 366.67 = 2200.  One
     * gather of both blocks (at 1338.33, forwards from there) left it idle from 733.33:
     * 2805 */
    x.peer_copy_bidir_gbps = ic_.peer_copy_bidir_gbps, x.call_overhead_us = 0;
    x.nccl_ag_gbps = 0.5;
    p = predict(FG_COLL_ALL_GATHER, 6, &t);
    cr_assert_eq(p.hier_count, 2);
    cr_assert_eq(p.hier_nodes[0], 2);
    NEAR(p.hier_us[0], 2200.0);
    /* nodes of 3 on slow links (10 + 333333 / 250 = 1343.33 us a push, NCCL's step at 5 +
     * 333333 / 1e6 = 5.33): one lane pushes the own block to 1343.33 and 2686.67, then the
     * step's to 4030 and 5373.33, the last GEMM to 5740; on a lane a node peer (a switch:
     * the bytes one after the other, the latencies side by side) each push after the first
     * hides its latency: 2676.67, 4010, 5343.33, the last GEMM to 5710.  Nodes of 2 have
     * one peer: no lanes */
    x.peer_copy_bidir_gbps = 0.5, x.nccl_ag_gbps = 1000;
    p = predict(FG_COLL_ALL_GATHER, 6, &t);
    cr_assert(p.hier_nodes[1] == 3 && isnan(p.hier_lanes_us[0]));
    NEAR(p.hier_us[1], 5740.0);
    NEAR(p.hier_lanes_us[1], 5710.0);
    x.peer_copy_bidir_gbps = ic_.peer_copy_bidir_gbps, x.call_overhead_us = 7;
    /* 8 ranks: nodes of 2 and of 4; 12 ranks: 2, 3, 4 and 6 */
    p = predict(FG_COLL_ALL_GATHER, 8, &t);
    cr_assert_eq(p.hier_count, 2);
    cr_assert(p.hier_nodes[0] == 2 && p.hier_nodes[1] == 4);
    p = predict(FG_COLL_REDUCE_SCATTER, 12, &t);
    cr_assert_eq(p.hier_count, 4);
    cr_assert(p.hier_nodes[1] == 3 && p.hier_nodes[3] == 6);
    for (unsigned h = 0; h < p.hier_count; h++)
        cr_assert(p.hier_us[h] >= 2000.0 * 1.1, "at least the 12 blocks' GEMMs (2200 us)");
    p = predict(FG_COLL_ALL_GATHER, 2, &t);
    cr_assert_eq(p.hier_count, 0, "one rank a node is not the hierarchical plan");
    p = predict(FG_COLL_ALL_GATHER, 5, &t);
    cr_assert_eq(p.hier_count, 0, "5 ranks: no node size");
    p = predict(FG_COLL_ALL_GATHER, 4, &target_);
    cr_assert_eq(p.hier_count, 0, "no NCCL fit");
}
