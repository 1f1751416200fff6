// `cairva`: wiring only. The CLI parses; these hooks connect its process-level commands
// to the libraries that implement them.
#include <memory>
#include <string>

#include "base/version.h"
#include "cli/cli.h"
#include "gateway/serve.h"
#include "metrics/metrics.h"
#include "mock_provider/mock_provider.h"
#include "store/open.h"

int main(int argc, char** argv) {
  cairva::cli::Hooks hooks;
  const auto schema = cairva::store::schema_versions();
  hooks.version = std::string("cairva ") + cairva::version_number() + " (commit " +
                  cairva::version_commit() + ")\nschema: sqlite " + std::to_string(schema.sqlite) +
                  ", postgresql " + std::to_string(schema.postgres);
  hooks.serve = [schema](const cairva::config::Config& config) {
    const bool embedded = config.store_url.starts_with("sqlite://");
    cairva::metrics::registry().set_build_info(
        {cairva::version_number(), cairva::version_commit(),
         embedded ? "sqlite " + std::to_string(schema.sqlite)
                  : "postgresql " + std::to_string(schema.postgres)});
    return cairva::gateway::run_serve(config, cairva::cli::store_options(config));
  };
  hooks.mock_provider = [](const std::string& listen, int threads) {
    return cairva::mock_provider::run({listen, threads});
  };
  hooks.audit =
      [](const cairva::config::Config& config) -> cairva::Result<cairva::store::AuditReport> {
    return cairva::store::audit_store(cairva::cli::store_options(config),
                                      std::make_shared<cairva::SystemClock>());
  };
  return cairva::cli::run(argc, argv, hooks);
}
