// `cairva`: wiring only. The CLI parses; the hooks below connect its process-level
// commands to the libraries that implement them, when those are part of the build.
#include <cstdio>
#include <memory>

#include "cli/cli.h"

#if CAIRVA_HAVE_GATEWAY
#include "gateway/serve.h"
#endif
#if CAIRVA_HAVE_MOCK_PROVIDER
#include "mock_provider/mock_provider.h"
#endif
#if CAIRVA_HAVE_STORE_OPEN
#include "store/open.h"
#endif

int main(int argc, char** argv) {
  cairva::cli::Hooks hooks;
#if CAIRVA_HAVE_GATEWAY
  hooks.serve = [](const cairva::config::Config& config) {
    return cairva::gateway::run_serve(config);
  };
#endif
#if CAIRVA_HAVE_MOCK_PROVIDER
  hooks.mock_provider = [](const std::string& listen) {
    cairva::mock_provider::Options options;
    options.listen = listen;
    return cairva::mock_provider::run(options);
  };
#endif
#if CAIRVA_HAVE_STORE_OPEN
  hooks.audit =
      [](const cairva::config::Config& config) -> cairva::Result<cairva::store::AuditReport> {
    auto store = cairva::store::open_store(cairva::cli::store_options(config),
                                           std::make_shared<cairva::SystemClock>());
    if (!store) return store.error();
    return (*store)->audit();
  };
#endif
  return cairva::cli::run(argc, argv, hooks);
}
