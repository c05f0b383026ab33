// A libFuzzer-compatible driver for builds without libFuzzer (GCC): runs the target on every
// file of the corpus directories given as arguments, then on deterministic mutations of them
// (bit flips, byte insertions and deletions, splices, and tokens that parsers stumble over), so
// that CI exercises each fuzz target as an ordinary test. A crash, a sanitizer report or an
// escaping exception fails it; the input that did is printed first.
//
//   <target> [--runs=N] [--max-len=N] DIR...
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

// xorshift64*: the same inputs on every run and machine.
class Random {
 public:
  explicit Random(uint64_t seed) : state_(seed | 1) {}
  uint64_t Next() {
    state_ ^= state_ >> 12;
    state_ ^= state_ << 25;
    state_ ^= state_ >> 27;
    return state_ * 0x2545F4914F6CDD1DULL;
  }
  size_t Below(size_t n) { return n == 0 ? 0 : static_cast<size_t>(Next() % n); }

 private:
  uint64_t state_;
};

// Fragments that reach the parsers' edges: wrong types, limits of integer types, nesting,
// YAML's own syntax.
const char* const kTokens[] = {"null",
                               "true",
                               "false",
                               "0",
                               "-1",
                               "1e400",
                               "1.5",
                               "2147483647",
                               "2147483648",
                               "9223372036854775807",
                               "9223372036854775808",
                               "18446744073709551616",
                               "-9223372036854775809",
                               "\"\"",
                               "[]",
                               "{}",
                               "[[[[[[[[",
                               "{\"a\":{\"a\":{\"a\":",
                               "\"\\u0000\"",
                               "\"\\uD800\"",
                               ": ",
                               "- ",
                               "\n  ",
                               "&a ",
                               "*a",
                               "!!binary ",
                               "? ",
                               "---\n",
                               "...\n",
                               "'",
                               "\"",
                               "#",
                               "%",
                               "~",
                               ".nan",
                               ".inf",
                               "-.inf",
                               "0x7fffffff",
                               "0o17",
                               "\t",
                               "\xff\xfe",
                               "\xc3\x28"};

std::string Mutate(const std::string& input, const std::vector<std::string>& corpus, Random& r,
                   size_t max_len) {
  std::string s = input;
  const size_t steps = 1 + r.Below(4);
  for (size_t i = 0; i < steps; ++i) {
    const size_t at = r.Below(s.size() + 1);
    switch (r.Below(6)) {
      case 0:  // flip a bit
        if (!s.empty()) s[r.Below(s.size())] ^= static_cast<char>(1 << r.Below(8));
        break;
      case 1:  // insert a random byte
        s.insert(at, 1, static_cast<char>(r.Below(256)));
        break;
      case 2:  // delete a run
        if (!s.empty()) s.erase(at == s.size() ? at - 1 : at, 1 + r.Below(8));
        break;
      case 3: {  // insert a token
        s.insert(at, kTokens[r.Below(std::size(kTokens))]);
        break;
      }
      case 4: {  // splice in part of another input
        const std::string& other = corpus[r.Below(corpus.size())];
        const size_t from = r.Below(other.size() + 1);
        s.insert(at, other.substr(from, r.Below(other.size() - from + 1)));
        break;
      }
      default:  // replace a byte with a token's first byte
        if (!s.empty()) s[r.Below(s.size())] = kTokens[r.Below(std::size(kTokens))][0];
        break;
    }
  }
  if (s.size() > max_len) s.resize(max_len);
  return s;
}

void Run(const std::string& input) {
  // A copy of exactly `size` bytes, so that reading past the end is a sanitizer error.
  std::vector<uint8_t> bytes(input.begin(), input.end());
  try {
    LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz: exception escaped (%s) on input:\n%s\n", e.what(), input.c_str());
    std::abort();
  } catch (...) {
    std::fprintf(stderr, "fuzz: exception escaped on input:\n%s\n", input.c_str());
    std::abort();
  }
}

}  // namespace

int main(int argc, char** argv) {
  size_t runs = 5000;
  size_t max_len = 4096;
  std::vector<std::string> corpus;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--runs=", 0) == 0) {
      runs = std::strtoull(arg.c_str() + 7, nullptr, 10);
    } else if (arg.rfind("--max-len=", 0) == 0) {
      max_len = std::strtoull(arg.c_str() + 10, nullptr, 10);
    } else {
      std::error_code ec;
      for (const auto& entry : std::filesystem::directory_iterator(arg, ec)) {
        std::ifstream in(entry.path(), std::ios::binary);
        corpus.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
      }
      if (ec) {
        std::fprintf(stderr, "fuzz: cannot read corpus %s: %s\n", arg.c_str(),
                     ec.message().c_str());
        return 2;
      }
    }
  }
  if (corpus.empty()) corpus.emplace_back();
  for (const std::string& input : corpus) Run(input);
  Random random(0x9E3779B97F4A7C15ULL);
  for (size_t i = 0; i < runs; ++i) {
    Run(Mutate(corpus[random.Below(corpus.size())], corpus, random, max_len));
  }
  std::printf("fuzz: %zu corpus inputs and %zu mutations ran\n", corpus.size(), runs);
  return 0;
}
