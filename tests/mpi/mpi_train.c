// SPDX-License-Identifier: GPL-2.0-only
/* dltrace-mpi-train: a small, real data-parallel training job (an MLP trained
 * by SGD, gradients averaged with one MPI_Allreduce per layer) to record.
 *
 * Each rank trains on its own shard of a generated, seeded classification
 * set. Per run (L layers, S steps) every rank calls:
 *   MPI_Bcast      L times at start (layer l: (in_l*out_l + out_l) floats),
 *   MPI_Allreduce  S*(L+1) + 1 times: per step one per layer in reverse
 *                  layer order (the layer's weights then biases, in place,
 *                  MPI_FLOAT, MPI_SUM) and one of {loss sum, correct count}
 *                  (2 floats); after training one more of {loss, correct}
 *                  over the held-out set.
 * With --ps (parameter server on rank 0) each per-layer MPI_Allreduce is an
 * MPI_Reduce of the gradients to rank 0 and an MPI_Bcast of the updated
 * layer from it instead.
 * Tests derive their expected counts from these rules. stdout carries no
 * timing, so it is byte-identical with and without the recorder. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <mpi.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { kLayers = 2 };

struct Options {
  int steps;
  int inputs;
  int hidden;
  int classes;
  int batch;        /* samples per rank per step */
  int samples;      /* training set size, split across ranks */
  int eval_samples; /* held-out set size, split across ranks */
  int print_every;
  float lr;
  uint64_t seed;
  int sleep_ms;
  int exit_without_finalize;
  int handle_sigterm;  /* 0 no, 1 before MPI_Init, 2 after it (one-shot), 3 ignored after it */
  int parameter_server; /* --ps: rank 0 serves the weights (Reduce + Bcast per layer) */
};

/* One fully connected layer; w (out x in, row-major) and b are adjacent in
 * params so that one allreduce covers the layer, like a gradient bucket. */
struct Layer {
  int in, out;
  float* params; /* w then b: in*out + out floats */
  float* grads;  /* same layout */
};

static volatile sig_atomic_t g_rank = -1;

static void Usage(FILE* f) {
  fprintf(f,
          "usage: dltrace-mpi-train [--steps N] [--inputs D] [--hidden H] [--classes C]\n"
          "         [--batch B] [--samples N] [--eval-samples N] [--print-every N]\n"
          "         [--lr X] [--seed S] [--sleep-ms MS] [--exit-without-finalize]\n"
          "         [--handle-sigterm | --handle-sigterm-after-init | --ignore-sigterm-after-init]\n"
          "         [--ps]\n");
}

static int ParseInt(const char* name, const char* text, int min, int* out) {
  char* end = NULL;
  errno = 0;
  long v = strtol(text, &end, 10);
  if (errno || end == text || *end || v < min || v > 1000000000L) {
    fprintf(stderr, "dltrace-mpi-train: %s wants an integer >= %d, got '%s'\n", name, min, text);
    return 0;
  }
  *out = (int)v;
  return 1;
}

/* An option that sets one int field: a flag sets it to VALUE; an integer
 * option parses its argument, VALUE being the least it takes. */
struct FieldOption {
  const char* name;
  int* field;
  int value;
};

/* The entry of OPTIONS[0..N) named NAME, or NULL. */
static const struct FieldOption* FindOption(const struct FieldOption* options, size_t n,
                                            const char* name) {
  for (size_t k = 0; k < n; ++k)
    if (!strcmp(options[k].name, name)) return &options[k];
  return NULL;
}

static int ParseOptions(int argc, char** argv, struct Options* o) {
  *o = (struct Options){.steps = 50, .inputs = 64, .hidden = 128, .classes = 10, .batch = 32,
                        .samples = 4096, .eval_samples = 1024, .print_every = 10, .lr = 0.05f,
                        .seed = 42};
  const struct FieldOption flags[] = {
      {"--exit-without-finalize", &o->exit_without_finalize, 1},
      {"--ps", &o->parameter_server, 1},
      {"--handle-sigterm", &o->handle_sigterm, 1},
      {"--handle-sigterm-after-init", &o->handle_sigterm, 2},
      {"--ignore-sigterm-after-init", &o->handle_sigterm, 3},
  };
  const struct FieldOption ints[] = {
      {"--steps", &o->steps, 0},
      {"--inputs", &o->inputs, 1},
      {"--hidden", &o->hidden, 1},
      {"--classes", &o->classes, 2},
      {"--batch", &o->batch, 1},
      {"--samples", &o->samples, 1},
      {"--eval-samples", &o->eval_samples, 1},
      {"--print-every", &o->print_every, 1},
      {"--sleep-ms", &o->sleep_ms, 0},
  };
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : NULL;
    int ok = 1;
    const struct FieldOption* flag = FindOption(flags, sizeof flags / sizeof flags[0], a);
    if (flag) {
      *flag->field = flag->value;
      continue;
    }
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      Usage(stdout);
      exit(0);
    }
    if (!v) {
      fprintf(stderr, "dltrace-mpi-train: unknown option or missing value: %s\n", a);
      Usage(stderr);
      return 0;
    }
    ++i;
    const struct FieldOption* integer = FindOption(ints, sizeof ints / sizeof ints[0], a);
    if (integer) {
      ok = ParseInt(a, v, integer->value, integer->field);
    } else if (!strcmp(a, "--seed")) {
      int s = 0;
      ok = ParseInt(a, v, 0, &s);
      o->seed = (uint64_t)s;
    } else if (!strcmp(a, "--lr")) {
      char* end = NULL;
      o->lr = strtof(v, &end);
      ok = end != v && !*end && o->lr > 0;
      if (!ok) fprintf(stderr, "dltrace-mpi-train: --lr wants a positive number, got '%s'\n", v);
    } else {
      fprintf(stderr, "dltrace-mpi-train: unknown option: %s\n", a);
      Usage(stderr);
      return 0;
    }
    if (!ok) return 0;
  }
  return 1;
}

/* splitmix64: every sample is a pure function of (seed, index), so a shard
 * holds the same data whatever the rank count and however often it is read. */
static uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

static double Uniform(uint64_t* state) { /* in (0, 1) */
  *state = Mix(*state);
  return ((double)(*state >> 11) + 0.5) / 9007199254740992.0;
}

static double Gaussian(uint64_t* state) {
  double u = Uniform(state), v = Uniform(state);
  return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

/* Sample `index` of the stream `set` (0 train, 1 eval): a class centroid plus
 * noise wide enough that the classes overlap and the loss keeps moving. */
static int MakeSample(const struct Options* o, const float* centroids, int set, uint64_t index,
                      float* x) {
  uint64_t state = Mix(o->seed ^ Mix(((uint64_t)set << 40) ^ index));
  int label = (int)(Mix(state) % (uint64_t)o->classes);
  for (int d = 0; d < o->inputs; ++d)
    x[d] = centroids[label * o->inputs + d] + (float)(2.5 * Gaussian(&state));
  return label;
}

static void InitLayer(struct Layer* l, int in, int out, uint64_t seed) {
  size_t n = (size_t)in * out + out;
  l->in = in;
  l->out = out;
  l->params = malloc(n * sizeof(float));
  l->grads = malloc(n * sizeof(float));
  if (!l->params || !l->grads) {
    fprintf(stderr, "dltrace-mpi-train: out of memory\n");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  /* He initialisation; rank 0's values win through MPI_Bcast. */
  uint64_t state = seed;
  double scale = sqrt(2.0 / in);
  for (size_t i = 0; i < (size_t)in * out; ++i) l->params[i] = (float)(scale * Gaussian(&state));
  for (size_t i = (size_t)in * out; i < n; ++i) l->params[i] = 0.0f;
}

static size_t LayerSize(const struct Layer* l) { return (size_t)l->in * l->out + l->out; }

/* y = W x + b, then ReLU unless this is the output layer. */
static void Forward(const struct Layer* l, const float* x, float* y, int relu) {
  const float* w = l->params;
  const float* b = l->params + (size_t)l->in * l->out;
  for (int o = 0; o < l->out; ++o) {
    float s = b[o];
    for (int i = 0; i < l->in; ++i) s += w[(size_t)o * l->in + i] * x[i];
    y[o] = relu && s < 0 ? 0 : s;
  }
}

/* Accumulates dL/dW, dL/db for one sample; writes dL/dx when dx is set. */
static void Backward(struct Layer* l, const float* x, const float* dy, float* dx) {
  const float* w = l->params;
  float* gw = l->grads;
  float* gb = l->grads + (size_t)l->in * l->out;
  for (int o = 0; o < l->out; ++o) {
    gb[o] += dy[o];
    for (int i = 0; i < l->in; ++i) gw[(size_t)o * l->in + i] += dy[o] * x[i];
  }
  if (!dx) return;
  for (int i = 0; i < l->in; ++i) {
    float s = 0;
    for (int o = 0; o < l->out; ++o) s += w[(size_t)o * l->in + i] * dy[o];
    dx[i] = s;
  }
}

/* Softmax cross-entropy on logits z; turns z into dL/dz. */
static float SoftmaxLoss(float* z, int classes, int label, int* correct) {
  int best = 0;
  float max = z[0];
  for (int c = 1; c < classes; ++c)
    if (z[c] > max) max = z[c], best = c;
  *correct = best == label;
  double sum = 0;
  for (int c = 0; c < classes; ++c) sum += exp((double)(z[c] - max));
  float loss = (float)(log(sum) - (z[label] - max));
  for (int c = 0; c < classes; ++c) z[c] = (float)(exp((double)(z[c] - max)) / sum);
  z[label] -= 1.0f;
  return loss;
}

struct Scratch {
  float *x, *h, *z, *dh;
};

/* One sample through the network; with train set, also accumulates the
 * gradients. Returns the loss. */
static float RunSample(struct Layer* layers, struct Scratch* s, int label, int classes,
                       int train, int* correct) {
  Forward(&layers[0], s->x, s->h, 1);
  Forward(&layers[1], s->h, s->z, 0);
  float loss = SoftmaxLoss(s->z, classes, label, correct);
  if (train) {
    Backward(&layers[1], s->h, s->z, s->dh);
    for (int i = 0; i < layers[0].out; ++i)
      if (s->h[i] <= 0) s->dh[i] = 0; /* ReLU */
    Backward(&layers[0], s->x, s->dh, NULL);
  }
  return loss;
}

/* Writes "rank R: TEXT" without stdio: this runs inside a signal handler. */
static void SayCaught(const char* tail) {
  char msg[96];
  size_t n = 0;
  const char* head = "rank ";
  while (*head) msg[n++] = *head++;
  int r = g_rank;
  if (r < 0) {
    msg[n++] = '?';
  } else {
    char digits[12];
    int k = 0;
    do digits[k++] = (char)('0' + r % 10), r /= 10;
    while (r);
    while (k) msg[n++] = digits[--k];
  }
  while (*tail) msg[n++] = *tail++;
  ssize_t ignored = write(STDERR_FILENO, msg, n);
  (void)ignored;
}

static void OnSigterm(int sig) {
  (void)sig;
  SayCaught(": caught SIGTERM\n");
  _exit(143);
}

/* Installed with SA_RESETHAND: the signal raised again here (delivered when
 * the handler returns) takes the default action and ends the process. Were
 * the one-shot reset lost, this would run, and print, a second time. */
static void OnSigtermOnce(int sig) {
  SayCaught(": caught SIGTERM after MPI_Init\n");
  raise(sig);
}

static void SleepMs(int ms) {
  struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000L};
  while (nanosleep(&t, &t) != 0 && errno == EINTR) {
  }
}

int main(int argc, char** argv) {
  struct Options o;
  if (!ParseOptions(argc, argv, &o)) return 2;

  /* Installed before MPI_Init on purpose: the recorder installs its own
   * handler when it starts (inside MPI_Init), so this checks that it chains
   * to the program's handler rather than replacing it. */
  if (o.handle_sigterm == 1) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = OnSigterm;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
  }

  MPI_Init(&argc, &argv);
  /* Installed after MPI_Init, where the recorder's own handler already is:
   * this checks that the recorder keeps it chained instead of losing its
   * footer, and that SA_RESETHAND and SIG_IGN keep their meaning. */
  if (o.handle_sigterm == 2) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = OnSigtermOnce;
    sa.sa_flags = SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
  } else if (o.handle_sigterm == 3) {
    signal(SIGTERM, SIG_IGN);
  }
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  g_rank = rank;

  /* Centroids are shared knowledge (same seed everywhere), not communicated. */
  float* centroids = malloc(sizeof(float) * (size_t)o.classes * o.inputs);
  if (!centroids) {
    fprintf(stderr, "dltrace-mpi-train: out of memory\n");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  uint64_t cstate = Mix(o.seed ^ 0xc3a5c85c97cb3127ULL);
  for (int i = 0; i < o.classes * o.inputs; ++i) centroids[i] = (float)Gaussian(&cstate);

  struct Layer layers[kLayers];
  InitLayer(&layers[0], o.inputs, o.hidden, Mix(o.seed + 1000 + (uint64_t)rank));
  InitLayer(&layers[1], o.hidden, o.classes, Mix(o.seed + 2000 + (uint64_t)rank));
  for (int l = 0; l < kLayers; ++l)
    MPI_Bcast(layers[l].params, (int)LayerSize(&layers[l]), MPI_FLOAT, 0, MPI_COMM_WORLD);

  struct Scratch s = {malloc(sizeof(float) * o.inputs), malloc(sizeof(float) * o.hidden),
                      malloc(sizeof(float) * o.classes), malloc(sizeof(float) * o.hidden)};
  if (!s.x || !s.h || !s.z || !s.dh) {
    fprintf(stderr, "dltrace-mpi-train: out of memory\n");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }

  /* This rank's contiguous shard of the training set; ranks past the end
   * of a tiny set still read (wrapping) so that every rank does the same
   * number of collectives. */
  uint64_t shard_begin = (uint64_t)o.samples * rank / size;
  uint64_t shard_len = (uint64_t)o.samples * (rank + 1) / size - shard_begin;
  if (shard_len == 0) shard_len = 1;
  const float global_batch = (float)o.batch * size;

  for (int step = 1; step <= o.steps; ++step) {
    for (int l = 0; l < kLayers; ++l) memset(layers[l].grads, 0, LayerSize(&layers[l]) * sizeof(float));
    float stats[2] = {0, 0}; /* loss sum, correct count */
    for (int j = 0; j < o.batch; ++j) {
      uint64_t index = shard_begin + ((uint64_t)(step - 1) * o.batch + j) % shard_len;
      int label = MakeSample(&o, centroids, 0, index, s.x);
      int correct = 0;
      stats[0] += RunSample(layers, &s, label, o.classes, 1, &correct);
      stats[1] += (float)correct;
    }
    /* Reverse layer order, as a framework's backward pass fills buckets. */
    for (int l = kLayers - 1; l >= 0; --l) {
      const int n = (int)LayerSize(&layers[l]);
      if (o.parameter_server) {
        /* Workers push gradients to the server (rank 0), which updates the
         * weights; every worker pulls them back. Same numbers as all-reduce. */
        MPI_Reduce(rank ? layers[l].grads : MPI_IN_PLACE, layers[l].grads, n, MPI_FLOAT, MPI_SUM, 0,
                   MPI_COMM_WORLD);
        if (rank == 0)
          for (int i = 0; i < n; ++i) layers[l].params[i] -= o.lr * layers[l].grads[i] / global_batch;
        MPI_Bcast(layers[l].params, n, MPI_FLOAT, 0, MPI_COMM_WORLD);
        continue;
      }
      MPI_Allreduce(MPI_IN_PLACE, layers[l].grads, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      for (int i = 0; i < n; ++i) layers[l].params[i] -= o.lr * layers[l].grads[i] / global_batch;
    }
    MPI_Allreduce(MPI_IN_PLACE, stats, 2, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0 && (step % o.print_every == 0 || step == 1)) {
      printf("step %d loss %.6f accuracy %.4f\n", step, stats[0] / global_batch,
             stats[1] / global_batch);
      fflush(stdout); /* progress a test can wait for through a pipe */
    }
    if (o.sleep_ms) SleepMs(o.sleep_ms);
  }

  /* Held-out evaluation, sharded like the training set. */
  uint64_t eval_begin = (uint64_t)o.eval_samples * rank / size;
  uint64_t eval_end = (uint64_t)o.eval_samples * (rank + 1) / size;
  float eval[2] = {0, 0};
  for (uint64_t i = eval_begin; i < eval_end; ++i) {
    int label = MakeSample(&o, centroids, 1, i, s.x);
    int correct = 0;
    eval[0] += RunSample(layers, &s, label, o.classes, 0, &correct);
    eval[1] += (float)correct;
  }
  MPI_Allreduce(MPI_IN_PLACE, eval, 2, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) {
    printf("final loss %.6f accuracy %.4f\n", eval[0] / o.eval_samples,
           eval[1] / o.eval_samples);
    fflush(stdout);
  }

  for (int l = 0; l < kLayers; ++l) {
    free(layers[l].params);
    free(layers[l].grads);
  }
  free(s.x), free(s.h), free(s.z), free(s.dh), free(centroids);

  /* Tests the recorder's exit path: no MPI_Finalize, the footer must still
   * be written from atexit. */
  if (o.exit_without_finalize) exit(0);
  MPI_Finalize();
  return 0;
}
