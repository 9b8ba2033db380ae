// gloo_shim.cpp — the project's only C++: a thin extern "C" layer over gloo
// (facebookincubator/gloo, Debian's libgloo-dev). Contract in gloo_shim.h.
//
// Rules kept here:
//  - no exception leaves this file: every entry point runs its body inside
//    guard(), which turns gloo::IoException (timeouts, broken connections),
//    gloo::EnforceNotMet, std::bad_alloc and anything else into a code and a
//    message;
//  - every wait takes the caller's timeout through gloo's per-operation
//    setTimeout option (or our own store polling, see ScopedStore);
//  - a context whose call failed is marked broken and its connections are
//    closed, so the peers blocked on it fail at once instead of waiting for
//    their own timeout, and later calls fail fast without touching sockets.
#include "backends/gloo_shim.h"

#include <algorithm>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/alltoall.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/common/error.h>
#include <gloo/common/logging.h>
#include <gloo/config.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>
#include <gloo/transport/unbound_buffer.h>
#include <gloo/types.h>

#include <dirent.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/resource.h>
#if GLOO_USE_REDIS
#include <gloo/rendezvous/redis_store.h>
#endif

namespace {

using ms = std::chrono::milliseconds;

// Slot prefixes for the operations implemented here on unbound buffers. gloo's
// own collectives use 0x01..0x08 (gloo/types.h); these stay clear of them so a
// point-to-point message can never be matched by a collective's receive.
constexpr uint8_t kSlotAlltoallv = 0x41;
constexpr uint8_t kSlotP2P = 0x42;

void put(char *msg, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void put(char *msg, size_t cap, const char *fmt, ...) {
    if (!msg || cap == 0) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, cap, fmt, ap);
    va_end(ap);
}

// Rewrites msg as "<prefix formatted from fmt>: <old msg>" without
// allocating, so it is safe after a caught exception (even bad_alloc).
void prefix_msg(char *msg, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void prefix_msg(char *msg, size_t cap, const char *fmt, ...) {
    if (!msg || cap == 0) return;
    char old[1024], head[512];
    snprintf(old, sizeof old, "%s", msg);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(head, sizeof head, fmt, ap);
    va_end(ap);
    snprintf(msg, cap, "%s: %s", head, old);
}

// gloo reports a wait that ran out as IoException("Timed out waiting ...") (or
// "... timeout ..." from the store and the connect path); everything else an
// IoException carries is a broken connection.
bool is_timeout(const char *what) {
    return strcasestr(what, "timed out") != nullptr || strcasestr(what, "timeout") != nullptr;
}

// Writes what into msg with gloo's "[/build/.../gloo/transport/tcp/pair.cc:123] "
// location cut down to "[gloo/transport/tcp/pair.cc:123] ": the build path
// says nothing to users. No allocation: it runs inside catch blocks.
void put_what(char *msg, size_t cap, const char *head, const char *what) {
    const char *g = what[0] == '[' ? strstr(what, "gloo/") : nullptr;
    const char *rb = strchr(what, ']');
    if (g && rb && g < rb) put(msg, cap, "%s[%s", head, g);
    else put(msg, cap, "%s%s", head, what);
}

// Runs f, translating every exception into a code; io_code is what a
// non-timeout IoException means for this entry point (a broken connection for
// collectives, an unusable store for store calls).
template <typename F>
int guard(char *msg, size_t cap, int io_code, F &&f) {
    try {
        f();
        return RP_GLOO_OK;
    } catch (const gloo::IoException &e) {
        put_what(msg, cap, "", e.what());
        return is_timeout(e.what()) ? RP_GLOO_TIMEOUT : io_code;
    } catch (const gloo::EnforceNotMet &e) {
        put_what(msg, cap, "gloo check failed: ", e.what());
        return io_code;
    } catch (const std::bad_alloc &) {
        put(msg, cap, "out of memory inside gloo");
        return RP_GLOO_NOMEM;
    } catch (const std::exception &e) {
        put_what(msg, cap, "", e.what());
        return is_timeout(e.what()) ? RP_GLOO_TIMEOUT : io_code;
    } catch (...) {
        put(msg, cap, "unknown C++ exception inside gloo");
        return io_code;
    }
}

// FileStore::check is protected; this exposes it so we can poll one key
// without FileStore::wait, whose timeout is counted in whole seconds.
class PollableFileStore : public gloo::rendezvous::FileStore {
  public:
    explicit PollableFileStore(const std::string &path) : FileStore(path) {}
    bool has(const std::string &key) { return check({key}); }
};

// The thread ids of this process (/proc/self/task), sorted.
std::vector<long> own_threads() {
    std::vector<long> t;
    if (DIR *d = opendir("/proc/self/task")) {
        while (struct dirent *e = readdir(d))
            if (e->d_name[0] != '.') t.push_back(strtol(e->d_name, nullptr, 10));
        closedir(d);
    }
    std::sort(t.begin(), t.end());
    return t;
}

// gloo's tcp device runs one event-loop thread. Its handler only try-locks a pair,
// and returns when the caller's thread holds it, leaving the level-triggered event
// to fire again: woken by a peer's message, the loop thread preempts our thread in
// the middle of a send (holding that pair's lock) and then spins on epoll_wait for
// its whole time slice (ring=2 64px flux-tiny: ~1 M epoll_wait calls for ~1.4 k
// messages, a third of the case's CPU time in the kernel). SCHED_BATCH takes away
// only the wakeup preemption: the loop thread runs when our thread blocks (it waits
// for every message it needs) or its slice ends. Best effort: a failure changes speed.
void no_wakeup_preemption(const std::vector<long> &before) {
    for (long tid : own_threads())
        if (!std::binary_search(before.begin(), before.end(), tid)) {
            struct sched_param sp = {};
            (void)sched_setscheduler((pid_t)tid, SCHED_BATCH, &sp);
        }
}

}  // namespace

struct rp_gloo_store {
    std::shared_ptr<gloo::rendezvous::Store> base;
    PollableFileStore *file = nullptr;  // views of base; exactly one is set
#if GLOO_USE_REDIS
    gloo::rendezvous::RedisStore *redis = nullptr;
#endif
    std::string backing;  // "FileStore /dir" | "RedisStore host:port"
    std::string prefix;
    std::string where;

    std::string full(const std::string &key) const { return prefix + "/" + key; }
    bool has(const std::string &key) const {
        if (file) return file->has(full(key));
#if GLOO_USE_REDIS
        if (redis) return redis->check({full(key)});
#endif
        return false;
    }
};

namespace {

// The store gloo's connectFullMesh sees: our prefix, and waits that poll every
// 5 ms against a millisecond deadline. (gloo's PrefixStore would forward the
// wait to FileStore::wait, which rounds elapsed time down to whole seconds, so
// a 3 s timeout would fire after 4 s.)
class ScopedStore : public gloo::rendezvous::Store {
  public:
    ScopedStore(rp_gloo_store &s, ms timeout) : s_(s), timeout_(timeout) {}
    void set(const std::string &key, const std::vector<char> &data) override {
        s_.base->set(s_.full(key), data);
    }
    std::vector<char> get(const std::string &key) override {
        wait({key}, timeout_);
        return s_.base->get(s_.full(key));
    }
    void wait(const std::vector<std::string> &keys) override { wait(keys, timeout_); }
    void wait(const std::vector<std::string> &keys, const ms &timeout) override {
        const auto start = std::chrono::steady_clock::now();
        for (;;) {
            std::string missing;
            for (const auto &k : keys)
                if (!s_.has(k)) missing += (missing.empty() ? "" : ", ") + k;
            if (missing.empty()) return;
            auto waited = std::chrono::duration_cast<ms>(std::chrono::steady_clock::now() - start);
            if (timeout != gloo::kNoTimeout && waited > timeout)
                throw gloo::IoException("rendezvous timed out after " +
                                        std::to_string(waited.count()) +
                                        " ms waiting for key(s) " + missing + " in " + s_.where);
            std::this_thread::sleep_for(ms(5));
        }
    }

  private:
    rp_gloo_store &s_;
    ms timeout_;
};

}  // namespace

struct rp_gloo_ctx {
    std::shared_ptr<gloo::Context> ctx;
    std::shared_ptr<gloo::transport::Device> dev;
    bool broken = false;
    std::string broken_msg;
};

extern "C" {

int rp_gloo_store_open(const char *dir, const char *redis_host, int redis_port,
                       const char *prefix, rp_gloo_store **out, char *msg, size_t cap) {
    *out = nullptr;
    std::unique_ptr<rp_gloo_store> s;
    int rc = guard(msg, cap, RP_GLOO_IO, [&] {
        s.reset(new rp_gloo_store);
        s->prefix = prefix ? prefix : "";
        if (dir) {
            auto f = std::make_shared<PollableFileStore>(dir);
            s->file = f.get();
            s->base = f;
            s->backing = std::string("FileStore ") + dir;
        } else {
#if GLOO_USE_REDIS
            auto r = std::make_shared<gloo::rendezvous::RedisStore>(redis_host, redis_port);
            s->redis = r.get();
            s->base = r;
            s->backing = std::string("RedisStore ") + redis_host + ":" + std::to_string(redis_port);
#else
            throw gloo::Exception("this gloo was built without Redis support (GLOO_USE_REDIS=0)");
#endif
        }
        s->where = s->backing + " (prefix '" + s->prefix + "')";
    });
    if (rc == RP_GLOO_OK)
        *out = s.release();
    else if (dir)
        prefix_msg(msg, cap, "cannot open FileStore %s", dir);
    else
        prefix_msg(msg, cap, "cannot connect to RedisStore %s:%d", redis_host, redis_port);
    return rc;
}

int rp_gloo_store_scope(const rp_gloo_store *parent, const char *sub, rp_gloo_store **out,
                        char *msg, size_t cap) {
    *out = nullptr;
    return guard(msg, cap, RP_GLOO_IO, [&] {
        std::unique_ptr<rp_gloo_store> s(new rp_gloo_store(*parent));
        s->prefix = parent->prefix + "/" + sub;
        s->where = s->backing + " (prefix '" + s->prefix + "')";
        *out = s.release();
    });
}

void rp_gloo_store_close(rp_gloo_store *s) {
    try {
        delete s;  // a RedisStore disconnects here
    } catch (...) {
    }
}

const char *rp_gloo_store_where(const rp_gloo_store *s) { return s->where.c_str(); }

int rp_gloo_store_set(rp_gloo_store *s, const char *key, const void *data, size_t len,
                      char *msg, size_t cap) {
    int rc = guard(msg, cap, RP_GLOO_IO, [&] {
        const char *p = static_cast<const char *>(data);
        s->base->set(s->full(key), std::vector<char>(p, p + len));
    });
    if (rc != RP_GLOO_OK) prefix_msg(msg, cap, "cannot set key '%s' in %s", key, s->where.c_str());
    return rc;
}

int rp_gloo_store_has(rp_gloo_store *s, const char *key, int *present, char *msg, size_t cap) {
    *present = 0;
    int rc = guard(msg, cap, RP_GLOO_IO, [&] { *present = s->has(key) ? 1 : 0; });
    if (rc != RP_GLOO_OK) prefix_msg(msg, cap, "cannot look up key '%s' in %s", key, s->where.c_str());
    return rc;
}

int rp_gloo_store_get(rp_gloo_store *s, const char *key, void *buf, size_t cap_bytes,
                      size_t *len, char *msg, size_t cap) {
    *len = 0;
    int rc = guard(msg, cap, RP_GLOO_IO, [&] {
        std::vector<char> v = s->base->get(s->full(key));
        *len = v.size();
        if (!v.empty()) memcpy(buf, v.data(), std::min(v.size(), cap_bytes));
    });
    if (rc != RP_GLOO_OK) prefix_msg(msg, cap, "cannot read key '%s' in %s", key, s->where.c_str());
    return rc;
}

int rp_gloo_connect(rp_gloo_store *s, int rank, int world, const char *iface,
                    const char *hostname, const rp_gloo_ctx *share_device, long timeout_ms,
                    rp_gloo_ctx **out, char *msg, size_t cap) {
    *out = nullptr;
    return guard(msg, cap, RP_GLOO_COMM, [&] {
        std::unique_ptr<rp_gloo_ctx> c(new rp_gloo_ctx);
        if (share_device) {
            c->dev = share_device->dev;
        } else {
            gloo::transport::tcp::attr attr;
            if (hostname) attr.hostname = hostname;
            if (iface) attr.iface = iface;
            const std::vector<long> before = own_threads();
            c->dev = gloo::transport::tcp::CreateDevice(attr);
            no_wakeup_preemption(before);
        }
        auto ctx = std::make_shared<gloo::rendezvous::Context>(rank, world);
        ctx->setTimeout(ms(timeout_ms));
        ScopedStore store(*s, ms(timeout_ms));
        ctx->connectFullMesh(store, c->dev);
        c->ctx = ctx;
        *out = c.release();
    });
}

void rp_gloo_ctx_free(rp_gloo_ctx *c) {
    if (!c) return;
    // Destructors of gloo pairs can throw on a broken socket in some versions;
    // nothing may escape into C.
    try {
        delete c;
    } catch (...) {
    }
}

int rp_gloo_ctx_broken(const rp_gloo_ctx *c) { return c->broken ? 1 : 0; }

}  // extern "C"

namespace {

// Runs one operation on a healthy context; on failure marks it broken and
// closes every connection so peers notice now, not at their timeout.
template <typename F>
int run_op(rp_gloo_ctx *c, char *msg, size_t cap, F &&f) {
    if (c->broken) {
        put(msg, cap, "communicator is broken by an earlier failure (%s)", c->broken_msg.c_str());
        return RP_GLOO_COMM;
    }
    int rc = guard(msg, cap, RP_GLOO_COMM, f);
    if (rc != RP_GLOO_OK) {
        c->broken = true;
        try {
            c->broken_msg = msg ? msg : "";
            c->ctx->closeConnections();
        } catch (...) {
        }
    }
    return rc;
}

void wait_ok(bool completed, const char *what) {
    if (!completed) throw gloo::IoException(std::string(what) + " was aborted");
}

void reduce_sum(void *c_, const void *a_, const void *b_, size_t n) {
    float *c = static_cast<float *>(c_);
    const float *a = static_cast<const float *>(a_), *b = static_cast<const float *>(b_);
    for (size_t i = 0; i < n; i++) c[i] = a[i] + b[i];
}

// b > a ? b : a keeps a when either is NaN: order-dependent for NaN, like any
// max, but deterministic because gloo's ring order is.
void reduce_max(void *c_, const void *a_, const void *b_, size_t n) {
    float *c = static_cast<float *>(c_);
    const float *a = static_cast<const float *>(a_), *b = static_cast<const float *>(b_);
    for (size_t i = 0; i < n; i++) c[i] = b[i] > a[i] ? b[i] : a[i];
}

}  // namespace

extern "C" {

int rp_gloo_allreduce_f32(rp_gloo_ctx *c, float *buf, size_t count, int op, long timeout_ms,
                          char *msg, size_t cap) {
    return run_op(c, msg, cap, [&] {
        gloo::AllreduceOptions o(c->ctx);
        o.setOutput(buf, count);
        o.setReduceFunction(op == 1 ? reduce_max : reduce_sum);
        o.setTag(0);
        o.setTimeout(ms(timeout_ms));
        gloo::allreduce(o);
    });
}

int rp_gloo_allgather_f32(rp_gloo_ctx *c, const float *send, size_t count, float *recv,
                          long timeout_ms, char *msg, size_t cap) {
    return run_op(c, msg, cap, [&] {
        gloo::AllgatherOptions o(c->ctx);
        o.setInput(const_cast<float *>(send), count);  // gloo only reads the input
        o.setOutput(recv, count * (size_t)c->ctx->size);
        o.setTag(0);
        o.setTimeout(ms(timeout_ms));
        gloo::allgather(o);
    });
}

int rp_gloo_alltoall_f32(rp_gloo_ctx *c, const float *send, float *recv, size_t count,
                         long timeout_ms, char *msg, size_t cap) {
    return run_op(c, msg, cap, [&] {
        gloo::AlltoallOptions o(c->ctx);
        const size_t n = count * (size_t)c->ctx->size;
        o.setInput(const_cast<float *>(send), n);
        o.setOutput(recv, n);
        o.setTag(0);
        o.setTimeout(ms(timeout_ms));
        gloo::alltoall(o);
    });
}

// gloo::alltoallv packs pieces contiguously in rank order; ours takes
// arbitrary displacements, so it is written here on unbound buffers the way
// gloo writes its own: post every send and receive, then wait for them all.
int rp_gloo_alltoallv(rp_gloo_ctx *c, const void *send, size_t send_extent,
                      const size_t *send_off, const size_t *send_len, void *recv,
                      size_t recv_extent, const size_t *recv_off, const size_t *recv_len,
                      long timeout_ms, char *msg, size_t cap) {
    return run_op(c, msg, cap, [&] {
        auto &ctx = c->ctx;
        const int me = ctx->rank, n = ctx->size;
        if (send_len[me]) memcpy(static_cast<char *>(recv) + recv_off[me],
                                 static_cast<const char *>(send) + send_off[me], send_len[me]);
        std::unique_ptr<gloo::transport::UnboundBuffer> in, out;
        if (send_extent) in = ctx->createUnboundBuffer(const_cast<void *>(send), send_extent);
        if (recv_extent) out = ctx->createUnboundBuffer(recv, recv_extent);
        const uint64_t slot = gloo::Slot::build(kSlotAlltoallv, 0);
        int sends = 0, recvs = 0;
        for (int i = 1; i < n; i++) {
            const int to = (me + i) % n, from = (me + n - i) % n;
            if (send_len[to]) {
                in->send(to, slot, send_off[to], send_len[to]);
                sends++;
            }
            if (recv_len[from]) {
                out->recv(from, slot, recv_off[from], recv_len[from]);
                recvs++;
            }
        }
        for (int i = 0; i < recvs; i++) wait_ok(out->waitRecv(ms(timeout_ms)), "alltoallv receive");
        for (int i = 0; i < sends; i++) wait_ok(in->waitSend(ms(timeout_ms)), "alltoallv send");
    });
}

int rp_gloo_broadcast(rp_gloo_ctx *c, void *buf, size_t bytes, int root, long timeout_ms,
                      char *msg, size_t cap) {
    return run_op(c, msg, cap, [&] {
        gloo::BroadcastOptions o(c->ctx);
        o.setOutput(static_cast<uint8_t *>(buf), bytes);
        o.setRoot(root);
        o.setTag(0);
        o.setTimeout(ms(timeout_ms));
        gloo::broadcast(o);
    });
}

int rp_gloo_sendrecv(rp_gloo_ctx *c, const void *send, size_t send_bytes, int dst, void *recv,
                     size_t recv_bytes, int src, uint32_t tag, long timeout_ms, char *msg,
                     size_t cap) {
    return run_op(c, msg, cap, [&] {
        const uint64_t slot = gloo::Slot::build(kSlotP2P, tag);
        std::unique_ptr<gloo::transport::UnboundBuffer> sb, rb;
        // Receive first: the peer's matching send can then complete at once.
        if (src >= 0 && recv_bytes) {
            rb = c->ctx->createUnboundBuffer(recv, recv_bytes);
            rb->recv(src, slot);
        }
        if (dst >= 0 && send_bytes) {
            sb = c->ctx->createUnboundBuffer(const_cast<void *>(send), send_bytes);
            sb->send(dst, slot);
        }
        if (rb) wait_ok(rb->waitRecv(ms(timeout_ms)), "receive");
        if (sb) wait_ok(sb->waitSend(ms(timeout_ms)), "send");
    });
}

int rp_gloo_barrier(rp_gloo_ctx *c, long timeout_ms, char *msg, size_t cap) {
    return run_op(c, msg, cap, [&] {
        gloo::BarrierOptions o(c->ctx);
        o.setTag(0);
        o.setTimeout(ms(timeout_ms));
        gloo::barrier(o);
    });
}

}  // extern "C"
