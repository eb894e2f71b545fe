// One round of the head layouts' A/B (scripts/bench.sh --ab REV --only heads): 32 heads of d = 64
// at T = 64 and T = 512, batch 1, one thread. Prints "name value" lines, CPU
// time of this process, for a driver (bench/ab/pair.mjs) that alternates two
// builds round by round:
//   attention_T / bwd_attention_T       one head: Attention, AttentionBackward
//                                       (saved forward), us per call, the
//                                       same head every call (its data stays
//                                       in cache)
//   attention_each_T / bwd_..._each_T   the same on each of the 32 heads in
//                                       turn (the data a multi-head call
//                                       reads), us per head
//   mha_bshd_T / bwd_bshd_T             MultiHeadAttentionQKV (its backward)
//                                       on [T, 32 * 64], us per head
//   mha_bhsd_T / bwd_bhsd_T             the same on [32 * T, 64], us per head
//   ratio_*                             a multi-head time per head over the
//                                       single-head time (one head: ratio_*_one)
//                                       of the same round
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "attnkit/attnkit.h"
#include "bench/native/harness.h"

namespace {

using attnkit::ConstMatrixView;
using attnkit::MatrixView;

using harness::Random;

// Checks fn's first call; the mean CPU microseconds per call over `per`.
double Time(double budget, double per, const std::function<bool()>& fn) {
  if (!fn()) {
    std::fprintf(stderr, "a call failed\n");
    std::exit(1);
  }
  return harness::MicrosPerCall(budget, [&] { fn(); }) / per;
}

constexpr size_t kHeads = 32, kD = 64;

// Every tensor of one shape in both layouts: bshd [T, H*d], bhsd [H*T, d].
struct Tensors {
  size_t T;
  std::vector<float> q, k, v, dout, out, lse, dq, dk, dv;     // bshd (lse: [H*T, 1])
  std::vector<float> hq, hk, hv, hdout, hout, hdq, hdk, hdv;  // bhsd
  explicit Tensors(size_t T_)
      : T(T_),
        q(Random(T * kHeads * kD, 1)),
        k(Random(T * kHeads * kD, 2)),
        v(Random(T * kHeads * kD, 3)),
        dout(Random(T * kHeads * kD, 4)),
        out(T * kHeads * kD),
        lse(T * kHeads),
        dq(T * kHeads * kD),
        dk(T * kHeads * kD),
        dv(T * kHeads * kD),
        hq(q.size()),
        hk(q.size()),
        hv(q.size()),
        hdout(q.size()),
        hout(q.size()),
        hdq(q.size()),
        hdk(q.size()),
        hdv(q.size()) {
    // bhsd copies of the same values.
    ToHeads(q, &hq);
    ToHeads(k, &hk);
    ToHeads(v, &hv);
    ToHeads(dout, &hdout);
  }
  ConstMatrixView Seq(const std::vector<float>& m) const {
    return ConstMatrixView(m.data(), T, kHeads * kD);
  }
  MatrixView Seq(std::vector<float>& m) const { return MatrixView(m.data(), T, kHeads * kD); }
  ConstMatrixView Head(const std::vector<float>& m) const {
    return ConstMatrixView(m.data(), kHeads * T, kD);
  }
  MatrixView Head(std::vector<float>& m) const { return MatrixView(m.data(), kHeads * T, kD); }
  void ToHeads(const std::vector<float>& m, std::vector<float>* h) const {
    if (!attnkit::SplitHeads(Seq(m), kHeads, Head(*h)).ok()) std::exit(1);
  }
  attnkit::HeadConfig Config(bool head_major) const {
    attnkit::HeadConfig c;
    c.num_heads = kHeads;
    c.num_kv_heads = kHeads;
    if (head_major) c.layout = attnkit::HeadLayout::kBHSD;
    return c;
  }
  bool ForwardSeq(const attnkit::AttentionOptions& o) {
    return attnkit::MultiHeadAttentionQKV(Seq(q), Seq(k), Seq(v), 1, Config(false), o, Seq(out))
        .ok();
  }
  bool TrainSeq(const attnkit::AttentionOptions& o) {
    return attnkit::MultiHeadAttentionQKVForTraining(Seq(q), Seq(k), Seq(v), 1, Config(false), o,
                                                     Seq(out),
                                                     MatrixView(lse.data(), kHeads * T, 1))
        .ok();
  }
  bool BackwardSeq(const attnkit::AttentionOptions& o) {
    return attnkit::MultiHeadAttentionQKVBackward(Seq(q), Seq(k), Seq(v), Seq(out), Seq(dout),
                                                  ConstMatrixView(lse.data(), kHeads * T, 1), 1,
                                                  Config(false), o, Seq(dq), Seq(dk), Seq(dv))
        .ok();
  }
  bool ForwardHeads(const attnkit::AttentionOptions& o) {
    return attnkit::MultiHeadAttentionQKV(Head(hq), Head(hk), Head(hv), 1, Config(true), o,
                                          Head(hout))
        .ok();
  }
  bool BackwardHeads(const attnkit::AttentionOptions& o) {
    return attnkit::MultiHeadAttentionQKVBackward(Head(hq), Head(hk), Head(hv), Head(hout),
                                                  Head(hdout),
                                                  ConstMatrixView(lse.data(), kHeads * T, 1), 1,
                                                  Config(true), o, Head(hdq), Head(hdk), Head(hdv))
        .ok();
  }
  // One head: head h's block of the bhsd tensors.
  ConstMatrixView One(const std::vector<float>& m, size_t h = 0) const {
    return ConstMatrixView(m.data() + h * T * kD, T, kD);
  }
  MatrixView One(std::vector<float>& m, size_t h = 0) const {
    return MatrixView(m.data() + h * T * kD, T, kD);
  }
  bool Attention(const attnkit::AttentionOptions& o, size_t h = 0) {
    return attnkit::Attention(One(hq, h), One(hk, h), One(hv, h), o, One(hout, h)).ok();
  }
  bool AttentionBackward(const attnkit::AttentionOptions& o, size_t h = 0) {
    return attnkit::AttentionBackward(One(hq, h), One(hk, h), One(hv, h), One(hout, h),
                                      One(hdout, h), ConstMatrixView(lse.data() + h * T, T, 1), o,
                                      One(hdq, h), One(hdk, h), One(hdv, h))
        .ok();
  }
  bool AttentionEach(const attnkit::AttentionOptions& o) {
    for (size_t h = 0; h < kHeads; ++h)
      if (!Attention(o, h)) return false;
    return true;
  }
  bool AttentionBackwardEach(const attnkit::AttentionOptions& o) {
    for (size_t h = 0; h < kHeads; ++h)
      if (!AttentionBackward(o, h)) return false;
    return true;
  }
};

}  // namespace

int main() {
  attnkit::AttentionOptions o;
  for (const size_t T : {64, 512}) {
    Tensors t(T);
    const double budget = T == 64 ? 0.05 : 0.15;
    const std::string s = "_T=" + std::to_string(T);
    std::map<std::string, double> us;
    // The forwards first; the backward reads the saved out and lse.
    us["attention"] = Time(budget, 1, [&] { return t.Attention(o); });
    us["attention_each"] = Time(budget, kHeads, [&] { return t.AttentionEach(o); });
    us["mha_bshd"] = Time(budget, kHeads, [&] { return t.ForwardSeq(o); });
    us["mha_bhsd"] = Time(budget, kHeads, [&] { return t.ForwardHeads(o); });
    if (!t.TrainSeq(o)) return 1;
    t.ToHeads(t.out, &t.hout);
    us["bwd_attention"] = Time(budget, 1, [&] { return t.AttentionBackward(o); });
    us["bwd_attention_each"] = Time(budget, kHeads, [&] { return t.AttentionBackwardEach(o); });
    us["bwd_bshd"] = Time(budget, kHeads, [&] { return t.BackwardSeq(o); });
    us["bwd_bhsd"] = Time(budget, kHeads, [&] { return t.BackwardHeads(o); });
    for (const auto& [name, value] : us) std::printf("%s%s %.3f\n", name.c_str(), s.c_str(), value);
    for (const char* name : {"mha_bshd", "mha_bhsd"}) {
      std::printf("ratio_%s%s %.4f\n", name, s.c_str(), us[name] / us["attention_each"]);
      std::printf("ratio_%s%s_one %.4f\n", name, s.c_str(), us[name] / us["attention"]);
    }
    for (const char* name : {"bwd_bshd", "bwd_bhsd"}) {
      std::printf("ratio_%s%s %.4f\n", name, s.c_str(), us[name] / us["bwd_attention_each"]);
      std::printf("ratio_%s%s_one %.4f\n", name, s.c_str(), us[name] / us["bwd_attention"]);
    }
  }
  return 0;
}
