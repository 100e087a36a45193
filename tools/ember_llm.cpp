// ember-llm: generate text with a program from ember.llm.export, streaming
// it as it decodes, then time to first token, prefill and decode tokens/s.
//
//   ember-llm model.pte --tokenizer tokenizer.model --prompt "..." [--max-new-tokens N]
//             [--temperature T] [--top-p P] [--seed S] [--threads N] [--data model.ptd]
//             [--no-bos] [--print-tokens]
//
// The program's constant methods (get_max_seq_len, get_max_context_len,
// get_vocab_size, get_bos_id, get_eos_ids, enable_dynamic_shape) say how to
// feed forward(tokens [1, n], input_pos [n]). Tokenizer: SentencePiece models
// (libsentencepiece). HF tokenizer.json has no maintained C++ library in
// Debian or PyPI; it is refused with a pointer to ember.llm.generate.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include <sentencepiece_processor.h>

#include "extension/module/module.h"
#include "extension/tensor/owned_tensor.h"
#include "runtime/kernel/thread_pool.h"

using namespace ember;
using ember::extension::Module;
using ember::extension::OwnedTensor;
using Clock = std::chrono::steady_clock;

namespace {

struct Options {
  std::string path;
  std::string data_path;
  std::string tokenizer;
  std::string prompt;
  bool have_prompt = false;
  int max_new_tokens = 128;
  double temperature = 0.0;
  double top_p = 1.0;
  uint64_t seed = 0;
  int threads = -1;
  bool bos = true;
  bool print_tokens = false;
};

int usage(const char* argv0) {
  std::fprintf(stderr,
               "usage: %s model.pte --tokenizer FILE --prompt TEXT [--max-new-tokens N]\n"
               "          [--temperature T] [--top-p P] [--seed S] [--threads N] [--data FILE.ptd]\n"
               "          [--no-bos] [--print-tokens]\n"
               "  --tokenizer FILE  a SentencePiece model (.model); for an HF tokenizer.json use\n"
               "                    ember.llm.generate in Python\n"
               "  --temperature T   0 (default) picks the most likely token; else top-p sampling\n"
               "  --print-tokens    also print the new token ids (stderr)\n",
               argv0);
  return 2;
}

int fail(const std::string& what, Error err) {
  std::fprintf(stderr, "ember-llm: %s: %s (%s)\n", what.c_str(), last_error_message(), error_name(err));
  return 1;
}

double seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// The program's metadata: each constant method returns one value.
struct Metadata {
  int64_t max_tokens_per_call = 1;
  int64_t max_context_len = 0;
  int64_t vocab_size = 0;
  int64_t bos_id = -1;
  std::vector<int64_t> eos_ids;
  bool dynamic = false;
};

// Reads constant method `name`; `found` is false when the program lacks it.
Result<const EValue*> constant(Module& module, const std::string& name, bool* found) {
  const std::vector<std::string> names = module.method_names();
  *found = std::find(names.begin(), names.end(), name) != names.end();
  if (!*found) return static_cast<const EValue*>(nullptr);
  Result<Method*> m = module.method(name);
  if (!m.ok()) return m.error();
  if (const Error err = m.get()->execute(); err != Error::Ok) return err;
  return m.get()->get_output(0);
}

bool read_metadata(Module& module, Metadata* md) {
  auto get_int = [&](const char* name, int64_t* out, bool required) {
    bool found = false;
    Result<const EValue*> v = constant(module, name, &found);
    if (!found) {
      if (required) {
        std::fprintf(stderr, "ember-llm: the program has no method '%s': not a program from "
                             "ember.llm.export\n", name);
      }
      return !required;
    }
    if (!v.ok() || !v.get()->is_scalar()) {
      std::fprintf(stderr, "ember-llm: method '%s' does not return a number\n", name);
      return false;
    }
    *out = v.get()->scalar_as_int();
    return true;
  };
  if (!get_int("get_max_seq_len", &md->max_tokens_per_call, true)) return false;
  md->max_context_len = md->max_tokens_per_call;
  if (!get_int("get_max_context_len", &md->max_context_len, false)) return false;
  if (!get_int("get_vocab_size", &md->vocab_size, true)) return false;
  if (!get_int("get_bos_id", &md->bos_id, false)) return false;
  int64_t dynamic = 0;
  if (!get_int("enable_dynamic_shape", &dynamic, false)) return false;
  md->dynamic = dynamic != 0;
  bool found = false;
  Result<const EValue*> eos = constant(module, "get_eos_ids", &found);
  if (found) {
    if (!eos.ok()) return false;
    const EValue& v = *eos.get();
    if (v.tag == Tag::IntList) {
      for (int64_t id : v.as_int_list.get()) md->eos_ids.push_back(id);
    } else if (v.is_int()) {
      md->eos_ids.push_back(v.as_int);
    }
  }
  return true;
}

// Top-p sampling at a temperature; greedy (lowest id on a tie) at 0.
class Sampler {
 public:
  Sampler(double temperature, double top_p, uint64_t seed)
      : temperature_(temperature), top_p_(top_p), rng_(seed) {}

  int64_t operator()(const float* logits, int64_t n) {
    if (temperature_ <= 0.0) {
      return std::max_element(logits, logits + n) - logits;
    }
    probs_.resize(static_cast<size_t>(n));
    const float top = *std::max_element(logits, logits + n);
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) {
      probs_[i] = std::exp((static_cast<double>(logits[i]) - top) / temperature_);
      sum += probs_[i];
    }
    order_.resize(static_cast<size_t>(n));
    std::iota(order_.begin(), order_.end(), 0);
    std::stable_sort(order_.begin(), order_.end(),
                     [&](int64_t a, int64_t b) { return probs_[a] > probs_[b]; });
    // The smallest set of most likely tokens whose probability reaches top_p.
    double kept = 0.0;
    size_t count = 0;
    while (count < order_.size() && (count == 0 || kept < top_p_ * sum)) kept += probs_[order_[count++]];
    std::uniform_real_distribution<double> uni(0.0, kept);
    double r = uni(rng_);
    for (size_t i = 0; i < count; ++i) {
      r -= probs_[order_[i]];
      if (r <= 0.0) return order_[i];
    }
    return order_[count - 1];
  }

 private:
  double temperature_;
  double top_p_;
  std::mt19937_64 rng_;
  std::vector<double> probs_;
  std::vector<int64_t> order_;
};

bool looks_like_json(const std::string& path) {
  if (path.size() >= 5 && path.compare(path.size() - 5, 5, ".json") == 0) return true;
  std::ifstream f(path, std::ios::binary);
  char c = 0;
  while (f.get(c) && (c == ' ' || c == '\n' || c == '\r' || c == '\t')) {
  }
  return f && c == '{';
}

// One forward call on `tokens` at positions `pos...`: the last row of logits.
Error run_forward(Method& method, const std::vector<int64_t>& tokens, int64_t pos,
                  std::vector<float>* last_logits) {
  const int32_t n = static_cast<int32_t>(tokens.size());
  const int32_t tok_sizes[2] = {1, n};
  const int32_t pos_sizes[1] = {n};
  OwnedTensor tok(ScalarType::Long, tok_sizes);
  OwnedTensor positions(ScalarType::Long, pos_sizes);
  auto* t = reinterpret_cast<int64_t*>(tok.bytes().data());
  auto* p = reinterpret_cast<int64_t*>(positions.bytes().data());
  for (int32_t i = 0; i < n; ++i) {
    t[i] = tokens[i];
    p[i] = pos + i;
  }
  EMBER_TRY(method.set_input(0, tok.tensor()));
  EMBER_TRY(method.set_input(1, positions.tensor()));
  EMBER_TRY(method.execute());
  Result<const EValue*> out = method.get_output(0);
  if (!out.ok()) return out.error();
  const EValue& v = *out.get();
  EMBER_CHECK_OR_RETURN(v.is_tensor() && v.to_tensor().dtype == ScalarType::Float,
                        Error::InvalidProgram, "forward: output 0 must be float32 logits");
  const Tensor& logits = v.to_tensor();
  const int64_t vocab = logits.sizes[logits.dim - 1];
  const float* data = static_cast<const float*>(logits.data) + (logits.numel - vocab);
  last_logits->assign(data, data + vocab);
  return Error::Ok;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    const char* v = nullptr;
    if (a == "--tokenizer" && (v = next())) opt.tokenizer = v;
    else if (a == "--prompt" && (v = next())) opt.prompt = v, opt.have_prompt = true;
    else if (a == "--data" && (v = next())) opt.data_path = v;
    else if (a == "--max-new-tokens" && (v = next())) opt.max_new_tokens = std::max(0, std::atoi(v));
    else if (a == "--temperature" && (v = next())) opt.temperature = std::atof(v);
    else if (a == "--top-p" && (v = next())) opt.top_p = std::atof(v);
    else if (a == "--seed" && (v = next())) opt.seed = std::strtoull(v, nullptr, 10);
    else if (a == "--threads" && (v = next())) opt.threads = std::max(0, std::atoi(v));
    else if (a == "--no-bos") opt.bos = false;
    else if (a == "--print-tokens") opt.print_tokens = true;
    else if (a == "-h" || a == "--help") return usage(argv[0]);
    else if (!a.empty() && a[0] != '-' && opt.path.empty()) opt.path = a;
    else {
      std::fprintf(stderr, "ember-llm: unknown or incomplete argument '%s'\n", a.c_str());
      return usage(argv[0]);
    }
  }
  if (opt.path.empty() || opt.tokenizer.empty() || !opt.have_prompt) return usage(argv[0]);
  if (!(opt.top_p > 0.0 && opt.top_p <= 1.0) || opt.temperature < 0.0) {
    std::fprintf(stderr, "ember-llm: --top-p must be in (0, 1] and --temperature >= 0\n");
    return 2;
  }
  if (opt.threads >= 0) (void)ember::set_thread_count(static_cast<size_t>(opt.threads));

  if (looks_like_json(opt.tokenizer)) {
    std::fprintf(stderr,
                 "ember-llm: %s is an HF tokenizer.json; ember-llm reads SentencePiece models only "
                 "(no maintained C++ library for tokenizer.json is packaged in Debian or PyPI). "
                 "Use ember.llm.generate in Python for tokenizer.json.\n",
                 opt.tokenizer.c_str());
    return 1;
  }
  sentencepiece::SentencePieceProcessor sp;
  if (const auto status = sp.Load(opt.tokenizer); !status.ok()) {
    std::fprintf(stderr, "ember-llm: %s: not a valid SentencePiece model (%s)\n",
                 opt.tokenizer.c_str(), status.ToString().c_str());
    return 1;
  }

  Result<std::unique_ptr<Module>> loaded =
      Module::load(opt.path, Module::LoadMode::Mmap, Program::Verification::Full, opt.data_path);
  if (!loaded.ok()) return fail("loading " + opt.path, loaded.error());
  Module& module = *loaded.get();
  Metadata md;
  if (!read_metadata(module, &md)) return 1;
  if (sp.GetPieceSize() > md.vocab_size) {
    std::fprintf(stderr, "ember-llm: the tokenizer has %d pieces but the model's vocabulary %lld: "
                         "they do not belong together\n",
                 sp.GetPieceSize(), static_cast<long long>(md.vocab_size));
    return 1;
  }
  Result<Method*> forward = module.method("forward");
  if (!forward.ok()) return fail("loading method 'forward'", forward.error());
  Method& method = *forward.get();

  std::vector<int> ids;
  if (const auto status = sp.Encode(opt.prompt, &ids); !status.ok()) {
    std::fprintf(stderr, "ember-llm: encoding the prompt: %s\n", status.ToString().c_str());
    return 1;
  }
  std::vector<int64_t> prompt(ids.begin(), ids.end());
  if (opt.bos && md.bos_id >= 0 && (prompt.empty() || prompt.front() != md.bos_id)) {
    prompt.insert(prompt.begin(), md.bos_id);
  }
  if (prompt.empty()) {
    std::fprintf(stderr, "ember-llm: the prompt is empty (no tokens and no BOS)\n");
    return 1;
  }
  if (static_cast<int64_t>(prompt.size()) >= md.max_context_len) {
    std::fprintf(stderr, "ember-llm: the prompt has %zu tokens but the program's KV cache holds %lld "
                         "positions (export with a larger max_seq_len, or shorten the prompt)\n",
                 prompt.size(), static_cast<long long>(md.max_context_len));
    return 1;
  }

  // Prefill: chunks of get_max_seq_len tokens (one token per call for a
  // program without a dynamic sequence dimension).
  const auto t0 = Clock::now();
  std::vector<float> logits;
  const size_t step =
      md.dynamic ? static_cast<size_t>(std::max<int64_t>(md.max_tokens_per_call, 1)) : 1;
  for (size_t i = 0; i < prompt.size(); i += step) {
    const size_t end = std::min(prompt.size(), i + step);
    const std::vector<int64_t> chunk(prompt.begin() + static_cast<long>(i),
                                     prompt.begin() + static_cast<long>(end));
    const Error err = run_forward(method, chunk, static_cast<int64_t>(i), &logits);
    if (err != Error::Ok) return fail("prefill", err);
  }
  const auto t_prefill = Clock::now();

  Sampler sample(opt.temperature, opt.top_p, opt.seed);
  // The new text is what decoding prompt + new tokens adds to the prompt's
  // text (a word-initial piece then gets its space); the prompt is echoed.
  std::vector<int> generated(prompt.begin(), prompt.end());  // stop tokens excluded
  std::string prompt_text;
  (void)sp.Decode(generated, &prompt_text);
  auto continuation = [&](std::string* out) {
    std::string text;
    (void)sp.Decode(generated, &text);
    if (text.compare(0, prompt_text.size(), prompt_text) == 0) {
      *out = text.substr(prompt_text.size());
    } else {
      const std::vector<int> only_new(generated.begin() + static_cast<long>(prompt.size()),
                                      generated.end());
      (void)sp.Decode(only_new, out);
    }
  };
  std::fputs(opt.prompt.c_str(), stdout);
  std::fflush(stdout);
  std::vector<int64_t> all_new;
  std::string emitted;
  double ttft = 0.0;
  Clock::time_point t_first = t0;
  Clock::time_point t_last = t0;
  int64_t pos = static_cast<int64_t>(prompt.size());
  const char* stop_reason = "max-new-tokens";
  while (static_cast<int>(all_new.size()) < opt.max_new_tokens) {
    const int64_t token = sample(logits.data(), static_cast<int64_t>(logits.size()));
    all_new.push_back(token);
    t_last = Clock::now();
    if (all_new.size() == 1) {
      t_first = t_last;
      ttft = seconds(t0, t_first);
    }
    if (std::find(md.eos_ids.begin(), md.eos_ids.end(), token) != md.eos_ids.end()) {
      stop_reason = "stop token";
      break;
    }
    // An id past the tokenizer's pieces (a model vocabulary padded beyond
    // it) has no text.
    if (token < sp.GetPieceSize()) generated.push_back(static_cast<int>(token));
    std::string text;
    continuation(&text);
    // Hold back text that ends inside a multi-byte character (U+FFFD).
    const bool partial = text.size() >= 3 && text.compare(text.size() - 3, 3, "\xEF\xBF\xBD") == 0;
    if (!partial && text.size() > emitted.size() && text.compare(0, emitted.size(), emitted) == 0) {
      std::fwrite(text.data() + emitted.size(), 1, text.size() - emitted.size(), stdout);
      std::fflush(stdout);
      emitted = text;
    }
    if (static_cast<int>(all_new.size()) == opt.max_new_tokens) break;
    if (pos >= md.max_context_len) {
      stop_reason = "cache full";
      break;
    }
    if (const Error err = run_forward(method, {token}, pos, &logits); err != Error::Ok) {
      return fail("decode at position " + std::to_string(pos), err);
    }
    ++pos;
  }
  std::string text;
  continuation(&text);
  if (text.size() > emitted.size() && text.compare(0, emitted.size(), emitted) == 0) {
    std::fwrite(text.data() + emitted.size(), 1, text.size() - emitted.size(), stdout);
  }
  std::fputc('\n', stdout);
  std::fflush(stdout);

  const double prefill_s = seconds(t0, t_prefill);
  // Decode: from the first new token to the last (forward calls, sampling, text).
  const double decode_s = seconds(t_first, t_last);
  const size_t decode_steps = all_new.empty() ? 0 : all_new.size() - 1;
  if (opt.print_tokens) {
    std::fprintf(stderr, "prompt tokens:");
    for (int64_t t : prompt) std::fprintf(stderr, " %lld", static_cast<long long>(t));
    std::fprintf(stderr, "\nnew tokens:");
    for (int64_t t : all_new) std::fprintf(stderr, " %lld", static_cast<long long>(t));
    std::fprintf(stderr, "\n");
  }
  std::fprintf(stderr,
               "prompt %zu tokens, %zu new (%s); time to first token %.1f ms; prefill %.1f tok/s; "
               "decode %.1f tok/s; threads %zu\n",
               prompt.size(), all_new.size(), stop_reason, ttft * 1e3,
               prefill_s > 0 ? double(prompt.size()) / prefill_s : 0.0,
               decode_s > 0 ? double(decode_steps) / decode_s : 0.0, ember::thread_count());
  return 0;
}
