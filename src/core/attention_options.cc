#include "src/core/attention_options.h"

#include <cmath>
#include <string>
#include <utility>

#include "src/core/validate.h"

namespace attnkit {
namespace internal {
namespace {

// A mask [batch * heads * (T_q or 1), keys <= T_k] laid out as `layout` says
// (see MaskLayout); checked here once so that SetHeadMasks can slice it.
template <typename T>
Status CheckMask(const char* name, const char* layout_name, MatrixViewT<T> m, MaskLayout layout,
                 const OptionShapes& c) {
  ATTNKIT_RETURN_IF_ERROR(CheckView(name, m));
  const std::string ln(layout_name);
  if (layout.batch != 1 && layout.batch != c.batch) {
    return Status(ErrorCode::kShapeMismatch, name,
                  "expected a batch extent (" + ln + ".batch) of 1 or batch = " +
                      std::to_string(c.batch) + ", got " + std::to_string(layout.batch));
  }
  if (layout.heads != 1 && layout.heads != c.num_heads) {
    return Status(ErrorCode::kShapeMismatch, name,
                  "expected a head extent (" + ln + ".heads) of 1 or num_heads = " +
                      std::to_string(c.num_heads) + ", got " + std::to_string(layout.heads));
  }
  const size_t blocks = layout.batch * layout.heads;  // both small: checked above
  size_t rows;
  ATTNKIT_RETURN_IF_ERROR(CheckedProduct(name, blocks, c.T_q, &rows));
  if (m.rows != rows && m.rows != blocks) {
    return Status(ErrorCode::kShapeMismatch, name,
                  "expected " + std::to_string(rows) + " rows (" + ln + ".batch " +
                      std::to_string(layout.batch) + " * " + ln + ".heads " +
                      std::to_string(layout.heads) + " * T_q " + std::to_string(c.T_q) + ") or " +
                      std::to_string(blocks) + " (one row shared by every query), got " +
                      std::to_string(m.rows) + " (shape " + ShapeString(m.rows, m.cols) + ")");
  }
  if (m.cols > c.T_k) {
    return Status(ErrorCode::kShapeMismatch, name,
                  "expected at most T_k = " + std::to_string(c.T_k) +
                      " columns (the key count; keys past a shorter mask are masked), got " +
                      std::to_string(m.cols) + " (shape " + ShapeString(m.rows, m.cols) + ")");
  }
  return Status::Ok();
}

using Shapes = OptionShapes;

// f(), called out of line: the rest of a check past its quick test (a
// refusal's message, a mask's full check), so that each check stays a few
// instructions that CheckEntries inlines on every call's path.
template <typename F>
[[gnu::noinline]] Status OutOfLine(F f) {
  return f();
}

// An option of one value per batch item given n `noun`s (n > 0): refused for
// a single sequence, whose option is `single`.
Status CheckBatched(const char* name, size_t n, const Shapes& c, const char* single,
                    const char* noun) {
  if (c.batched) return Status::Ok();
  return Status(ErrorCode::kInvalidArgument, name,
                std::string("expected empty for a single sequence (use ") + single + "), got " +
                    CountString(n, noun));
}

// The same, checked for one value per batch item.
Status CheckPerItem(const char* name, size_t n, const Shapes& c, const char* noun) {
  if (n == c.batch) return Status::Ok();
  return Status(ErrorCode::kInvalidArgument, name,
                "expected batch = " + std::to_string(c.batch) + " " + noun + "s (or none), got " +
                    std::to_string(n));
}

// The attention options in the order of ATTENTION_OPTIONS in src/js/options.js
// (tests/js/option-layout.test.js compares the words). Absent options arrive
// as their defaults: scale 0 (derived from d_k), key_length -1 (all keys),
// views and arrays at address 0, mask layouts 1 x 1.
constexpr AttentionOptionEntry kAttentionOptions[] = {
    {"scale",
     [](ArgWords& a, AttentionOptions* o) {
       const float scale = a.Float();
       if (scale > 0) o->scale = scale;
     },
     [](const AttentionOptions& o, const Shapes&) {
       if (!o.scale.has_value() || (std::isfinite(*o.scale) && *o.scale > 0.0f)) {
         return Status::Ok();
       }
       return OutOfLine([&] {
         return Status(ErrorCode::kInvalidArgument, "scale",
                       "expected a finite number > 0, got " + FloatString(*o.scale));
       });
     }},
    {"softcap", [](ArgWords& a, AttentionOptions* o) { o->softcap = a.Float(); },
     [](const AttentionOptions& o, const Shapes&) {
       if (std::isfinite(o.softcap) && o.softcap >= 0.0f) return Status::Ok();
       return OutOfLine([&] {
         return Status(ErrorCode::kInvalidArgument, "softcap",
                       "expected 0 (off) or a finite number > 0, got " + FloatString(o.softcap));
       });
     }},
    {"causal", [](ArgWords& a, AttentionOptions* o) { o->causal = a.Word() != 0; }, nullptr},
    {"causal_alignment",
     [](ArgWords& a, AttentionOptions* o) {
       o->causal_alignment =
           a.Word() != 0 ? CausalAlignment::kUpperLeft : CausalAlignment::kLowerRight;
     },
     [](const AttentionOptions& o, const Shapes&) {
       if (o.causal_alignment == CausalAlignment::kLowerRight ||
           o.causal_alignment == CausalAlignment::kUpperLeft) {
         return Status::Ok();
       }
       return OutOfLine([&] {
         return Status(ErrorCode::kInvalidArgument, "causal_alignment",
                       "expected kLowerRight (0) or kUpperLeft (1), got " +
                           std::to_string(static_cast<int>(o.causal_alignment)));
       });
     }},
    {"causal_offset",
     [](ArgWords& a, AttentionOptions* o) { o->causal_offset = static_cast<int32_t>(a.Word()); },
     [](const AttentionOptions& o, const Shapes&) {
       if (o.causal_offset == 0 || o.causal_alignment == CausalAlignment::kUpperLeft) {
         return Status::Ok();
       }
       return OutOfLine([&] {
         return Status(ErrorCode::kInvalidArgument, "causal_offset",
                       "expected 0 with causal_alignment kLowerRight (the offset moves the "
                       "kUpperLeft frontier: set causal_alignment = kUpperLeft), got " +
                           std::to_string(o.causal_offset));
       });
     }},
    {"causal_offsets,causal_offsets.count",
     [](ArgWords& a, AttentionOptions* o) { a.Array<int32_t>(&o->causal_offsets); },
     [](const AttentionOptions& o, const Shapes& c) {
       const size_t n = o.causal_offsets.size();
       if (n == 0) return Status::Ok();
       return OutOfLine([&] {
         ATTNKIT_RETURN_IF_ERROR(CheckBatched("causal_offsets", n, c, "causal_offset", "offset"));
         if (o.causal_alignment != CausalAlignment::kUpperLeft) {
           return Status(ErrorCode::kInvalidArgument, "causal_offsets",
                         "expected empty with causal_alignment kLowerRight (offsets apply to "
                         "kUpperLeft), got " +
                             CountString(n, "offset"));
         }
         return CheckPerItem("causal_offsets", n, c, "offset");
       });
     }},
    {"key_length",
     [](ArgWords& a, AttentionOptions* o) {
       const int32_t key_length = static_cast<int32_t>(a.Word());
       if (key_length >= 0) o->key_length = static_cast<size_t>(key_length);
     },
     [](const AttentionOptions& o, const Shapes& c) {
       if (!o.key_length.has_value() || *o.key_length <= c.T_k) return Status::Ok();
       return OutOfLine([&] {
         return Status(ErrorCode::kInvalidArgument, "key_length",
                       "expected at most T_k = " + std::to_string(c.T_k) + ", got " +
                           std::to_string(*o.key_length));
       });
     }},
    {"key_lengths,key_lengths.count",
     [](ArgWords& a, AttentionOptions* o) { a.Array<uint32_t>(&o->key_lengths); },
     [](const AttentionOptions& o, const Shapes& c) {
       const size_t n = o.key_lengths.size();
       if (n == 0) return Status::Ok();
       return OutOfLine([&] {
         ATTNKIT_RETURN_IF_ERROR(CheckBatched("key_lengths", n, c, "key_length", "length"));
         ATTNKIT_RETURN_IF_ERROR(CheckPerItem("key_lengths", n, c, "length"));
         for (size_t b = 0; b < n; ++b) {
           if (o.key_lengths[b] > c.T_k) {
             return Status(ErrorCode::kInvalidArgument, "key_lengths[" + std::to_string(b) + "]",
                           "expected at most T_k = " + std::to_string(c.T_k) + ", got " +
                               std::to_string(o.key_lengths[b]));
           }
         }
         return Status::Ok();
       });
     }},
    {"bool_mask,bool_mask.rows,bool_mask.cols,bool_mask_layout.batch,bool_mask_layout.heads",
     [](ArgWords& a, AttentionOptions* o) {
       o->bool_mask = a.View<const uint8_t>();
       o->bool_mask_layout = a.Layout();
     },
     [](const AttentionOptions& o, const Shapes& c) {
       if (o.bool_mask.empty()) return Status::Ok();
       return OutOfLine([&] {
         return CheckMask("bool_mask", "bool_mask_layout", o.bool_mask, o.bool_mask_layout, c);
       });
     }},
    {"additive_mask,additive_mask.rows,additive_mask.cols,additive_mask_layout.batch,"
     "additive_mask_layout.heads",
     [](ArgWords& a, AttentionOptions* o) {
       o->additive_mask = a.View<const float>();
       o->additive_mask_layout = a.Layout();
     },
     [](const AttentionOptions& o, const Shapes& c) {
       if (o.additive_mask.empty()) return Status::Ok();
       return OutOfLine([&] {
         ATTNKIT_RETURN_IF_ERROR(CheckMask("additive_mask", "additive_mask_layout", o.additive_mask,
                                           o.additive_mask_layout, c));
         return CheckFinite("additive_mask", o.additive_mask, /*allow_neg_inf=*/true);
       });
     }},
};

constexpr size_t kNumAttentionOptions = sizeof(kAttentionOptions) / sizeof(kAttentionOptions[0]);

// The checks of entries I..., each a direct call the compiler can inline (the
// table is constexpr): every call walks them, so a loop of indirect calls
// would be a measurable part of a small call.
template <size_t I>
bool EntryPasses(const AttentionOptions& o, const OptionShapes& shapes, Status* status) {
  constexpr auto check = kAttentionOptions[I].check;  // a constant: a direct call
  if constexpr (check == nullptr) {
    return true;
  } else {
    *status = check(o, shapes);
    return status->ok();
  }
}
template <size_t... I>
Status CheckEntries(const AttentionOptions& o, const OptionShapes& shapes,
                    std::index_sequence<I...>) {
  Status status;
  (void)(EntryPasses<I>(o, shapes, &status) && ...);
  return status;
}

// The reads of entries I..., direct calls for the same reason.
template <size_t... I>
void ReadEntries(ArgWords& a, AttentionOptions* o, std::index_sequence<I...>) {
  (..., kAttentionOptions[I].read(a, o));
}

}  // namespace

AttentionOptionTable AttentionOptionEntries() { return {kAttentionOptions, kNumAttentionOptions}; }

void ReadAttentionOptions(ArgWords& a, AttentionOptions* o) {
  ReadEntries(a, o, std::make_index_sequence<kNumAttentionOptions>());
}

Status CheckAttentionOptions(const AttentionOptions& o, const OptionShapes& shapes) {
  return CheckEntries(o, shapes, std::make_index_sequence<kNumAttentionOptions>());
}

}  // namespace internal
}  // namespace attnkit
