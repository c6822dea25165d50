#include "jit_hook.h"

#include <atomic>

namespace convgrad {
namespace {
std::atomic<JitProvider *> g_provider{nullptr};
}  // namespace

void set_jit_provider(JitProvider *provider) { g_provider.store(provider); }
JitProvider *jit_provider() { return g_provider.load(); }

}  // namespace convgrad
