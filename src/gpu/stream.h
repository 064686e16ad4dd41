/*
 * stream: tlmpi's own streams and events, and the wait for the GPU work a collective enqueued.
 */
#ifndef TLMPI_STREAM_H
#define TLMPI_STREAM_H

/*
 * tlmpi's own streams and events on one device, created on first use (the caller's current device
 * is switched for the creation and restored). stream/stream2 are cudaStream_t (two, so that copies
 * in the two directions can run on both copy engines at once), events cudaEvent_t (with timing
 * disabled). NULL if the device cannot be used.
 */
#define TLMPI_GPU_MAX_EVENTS 8
typedef struct {
    void *stream;
    void *stream2;
    void *events[TLMPI_GPU_MAX_EVENTS];
    volatile unsigned *done_word;   /* pinned, mapped host word the GPU writes (NULL: no spin wait) */
    void *done_word_dev;            /* its device address */
    unsigned done_seq;              /* last value enqueued for done_word */
    int spin;                       /* tlmpi_gpu_stream_wait polls done_word */
} tlmpi_gpu_ctx_t;
tlmpi_gpu_ctx_t *tlmpi_gpu_ctx(int dev);

/* Wait until everything enqueued so far on ctx->stream has completed (blocking MPI semantics);
 * returns a cudaError_t (0 = success). With ctx->spin the GPU writes a new value into done_word
 * after the work and the host polls it, calling cudaStreamQuery every few microseconds so that a
 * failed kernel is reported rather than waited for forever; else cudaStreamSynchronize. Only one
 * thread at a time may use ctx->stream (spin is off under MPI_THREAD_MULTIPLE). */
int tlmpi_gpu_stream_wait(tlmpi_gpu_ctx_t *ctx);

/* Destroy streams/events and flush the cache (finalize). */
void tlmpi_gpu_finalize(void);

#endif
