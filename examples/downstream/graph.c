/* A CUDA graph of one fg_launch(): libfgrt's launch path must be capturable
 * (no allocation, synchronization or descriptor encoding).  The graph API is
 * not part of libfgrt; fg_driver_symbol() reaches the driver's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "demo.h"

typedef int (*stream_create_fn)(void **stream, unsigned flags);
typedef int (*stream_fn)(void *stream);
typedef int (*begin_capture_fn)(void *stream, int mode);
typedef int (*end_capture_fn)(void *stream, void **graph);
typedef int (*instantiate_fn)(void **exec, void *graph, unsigned long long flags);
typedef int (*graph_launch_fn)(void *exec, void *stream);
typedef int (*destroy_fn)(void *handle);

#define CAPTURE_MODE_THREAD_LOCAL 1
#define STREAM_NON_BLOCKING 1

/* POSIX: the driver's object pointer converts to a function pointer. */
static void resolve(const fg_context *ctx, const char *name, void *fnptr)
{
    void *p = fg_driver_symbol(ctx, name);
    memcpy(fnptr, &p, sizeof p);
}

int graph_replay_check(fg_context *ctx, fg_binding *b, void *y, const uint16_t *expect,
                       size_t bytes)
{
    fg_device_info dev;
    fg_device_get_info(ctx, &dev);
    if (dev.backend != FG_BACKEND_CUDA) {
        printf("demo: CUDA graph check skipped on a HIP device\n");
        return 0;
    }
    stream_create_fn stream_create;
    stream_fn stream_sync, stream_destroy;
    begin_capture_fn begin;
    end_capture_fn end;
    instantiate_fn instantiate;
    graph_launch_fn graph_launch;
    destroy_fn graph_destroy, exec_destroy;
    resolve(ctx, "cuStreamCreate", &stream_create);
    resolve(ctx, "cuStreamSynchronize", &stream_sync);
    resolve(ctx, "cuStreamDestroy", &stream_destroy);
    resolve(ctx, "cuStreamBeginCapture", &begin);
    resolve(ctx, "cuStreamEndCapture", &end);
    resolve(ctx, "cuGraphInstantiateWithFlags", &instantiate);
    resolve(ctx, "cuGraphLaunch", &graph_launch);
    resolve(ctx, "cuGraphDestroy", &graph_destroy);
    resolve(ctx, "cuGraphExecDestroy", &exec_destroy);
    if (!stream_create || !stream_sync || !stream_destroy || !begin || !end || !instantiate ||
        !graph_launch || !graph_destroy || !exec_destroy) {
        fprintf(stderr, "demo: the CUDA driver lacks a graph function\n");
        return 1;
    }

    uint16_t *got = malloc(bytes);
    void *stream = NULL, *graph = NULL, *exec = NULL;
    int rc = !got || fg_make_current(ctx) != FG_OK || stream_create(&stream, STREAM_NON_BLOCKING);
    if (!rc) {
        memset(got, 0xff, bytes); /* poison y again: the replays must rewrite it */
        rc = fg_memcpy_to_device(ctx, y, got, bytes) != FG_OK ||
             begin(stream, CAPTURE_MODE_THREAD_LOCAL);
    }
    if (!rc) {
        const fg_status s = fg_launch(b, stream); /* recorded into the graph, not run */
        rc = end(stream, &graph) || s != FG_OK;
        if (s != FG_OK)
            fprintf(stderr, "demo: captured launch: %s (%s)\n", fg_status_string(s),
                    fg_last_error());
    }
    if (!rc)
        rc = instantiate(&exec, graph, 0) || graph_launch(exec, stream) ||
             graph_launch(exec, stream) || stream_sync(stream) ||
             fg_memcpy_to_host(ctx, got, y, bytes) != FG_OK;
    const int same = !rc && memcmp(got, expect, bytes) == 0;
    printf("demo: CUDA graph capture and replay: %s\n",
           rc ? "driver error" : same ? "bitwise identical" : "DIFFERENT");
    if (exec)
        exec_destroy(exec);
    if (graph)
        graph_destroy(graph);
    if (stream)
        stream_destroy(stream);
    free(got);
    return !same;
}
