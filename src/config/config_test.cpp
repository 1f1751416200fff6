#include "config/config.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "base/test_env.h"

namespace cairva::config {
namespace {

constexpr const char* full_config = R"(
[server]
listen = "0.0.0.0:9000"
admin_listen = "127.0.0.1:9001"
threads = 3
access_log = false
[admin]
token_env = "CAIRVA_TEST_ADMIN_TOKEN"
[store]
url = "postgresql://cairva@db/cairva"
sync = "full"
pool_size = 16
[holds]
default_max_tokens = 2048
in_flight_timeout_s = 30
[[providers]]
name = "openai"
base_url = "https://api.openai.com/v1"
api_key_env = "CAIRVA_TEST_PROVIDER_KEY"
timeout_s = 45
[[providers]]
name = "local"
base_url = "http://127.0.0.1:9090/v1"
)";

class ConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    test_env::set("CAIRVA_TEST_PROVIDER_KEY", "sk-test");
    test_env::set("CAIRVA_TEST_ADMIN_TOKEN", "admin-secret");
    test_env::unset("CAIRVA_TEST_MISSING_KEY");
    test_env::set("CAIRVA_TEST_EMPTY_KEY", "");
  }

  // The error line of a config that must be refused.
  static std::string error_of(const std::string& text) {
    auto r = parse_config(text, "cairva.toml");
    EXPECT_FALSE(r.ok()) << "accepted: " << text;
    if (r.ok()) return "";
    EXPECT_EQ(r.error().message.find('\n'), std::string::npos) << "one line";
    return r.error().message;
  }
};

TEST_F(ConfigTest, ReadsEveryKey) {
  auto r = parse_config(full_config, "cairva.toml");
  ASSERT_TRUE(r.ok()) << r.error().message;
  const Config& c = *r;
  EXPECT_EQ(c.source, "cairva.toml");
  EXPECT_EQ(c.listen, "0.0.0.0:9000");
  EXPECT_EQ(c.admin_listen, "127.0.0.1:9001");
  EXPECT_EQ(c.threads, 3);
  EXPECT_FALSE(c.access_log);
  EXPECT_EQ(c.admin_token_env, "CAIRVA_TEST_ADMIN_TOKEN");
  EXPECT_EQ(c.admin_token, "admin-secret");
  EXPECT_EQ(c.store_url, "postgresql://cairva@db/cairva");
  EXPECT_TRUE(c.store_sync_full);
  EXPECT_EQ(c.pool_size, 16);
  EXPECT_EQ(c.default_max_tokens, 2048);
  EXPECT_EQ(c.in_flight_timeout_s, 30);
  ASSERT_EQ(c.providers.size(), 2u);
  EXPECT_EQ(c.providers[0].name, "openai");
  EXPECT_EQ(c.providers[0].base_url, "https://api.openai.com/v1");
  EXPECT_EQ(c.providers[0].api_key_env, "CAIRVA_TEST_PROVIDER_KEY");
  EXPECT_EQ(c.providers[0].api_key, "sk-test");
  EXPECT_EQ(c.providers[0].timeout_s, 45);
  EXPECT_EQ(c.providers[1].name, "local");
  EXPECT_EQ(c.providers[1].api_key, "");
  EXPECT_EQ(c.providers[1].timeout_s, provider_timeout_s_default);
}

TEST_F(ConfigTest, EmptyFileGivesDefaults) {
  auto r = parse_config("", "empty.toml");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->listen, listen_default);
  EXPECT_EQ(r->admin_listen, admin_listen_default);
  EXPECT_EQ(r->admin_token_env, admin_token_env_default);
  EXPECT_EQ(r->store_url, store_url_default);
  EXPECT_FALSE(r->store_sync_full);
  EXPECT_EQ(r->pool_size, pool_size_default);
  EXPECT_EQ(r->default_max_tokens, default_max_tokens_default);
  EXPECT_EQ(r->in_flight_timeout_s, in_flight_timeout_s_default);
  EXPECT_EQ(r->threads, 0);
  EXPECT_TRUE(r->access_log);
  EXPECT_TRUE(r->providers.empty());
}

TEST_F(ConfigTest, DefaultConfigUsesEmbeddedStoreInWorkingDirectory) {
  test_env::set(admin_token_env_default, "tok");
  Config c = default_config();
  EXPECT_EQ(c.source, "(defaults)");
  EXPECT_EQ(c.store_url, "sqlite://cairva.db");
  EXPECT_EQ(c.admin_token, "tok");
  EXPECT_TRUE(c.providers.empty());
  test_env::unset(admin_token_env_default);
}

TEST_F(ConfigTest, AcceptsAllThreeStoreSchemesAndIpv6Listen) {
  for (const char* url : {"sqlite:///var/lib/cairva.db", "sqlite://rel.db", "postgres://h/db",
                          "postgresql://u@h:5432/db"}) {
    auto r = parse_config(std::string("[store]\nurl = \"") + url + "\"\n", "c.toml");
    ASSERT_TRUE(r.ok()) << url << ": " << r.error().message;
    EXPECT_EQ(r->store_url, url);
  }
  auto r = parse_config("[server]\nlisten = \"[::1]:0\"\n", "c.toml");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->listen, "[::1]:0");
}

TEST_F(ConfigTest, RefusesUnknownTopLevelTable) {
  EXPECT_EQ(error_of("[serverr]\nlisten = \"a:1\"\n"), "cairva.toml: serverr: unknown table");
}

TEST_F(ConfigTest, RefusesUnknownTopLevelKey) {
  EXPECT_EQ(error_of("verbose = true\n"), "cairva.toml: verbose: unknown key");
}

TEST_F(ConfigTest, ProviderCaFileMustBeReadable) {
  EXPECT_EQ(error_of("[[providers]]\nname = \"p\"\nbase_url = \"https://x.test/v1\"\nca_file = "
                     "\"/nonexistent/ca.pem\"\n"),
            "cairva.toml: providers[0].ca_file: cannot read \"/nonexistent/ca.pem\"");
  auto ok = parse_config(
      "[[providers]]\nname = \"p\"\nbase_url = \"https://x.test/v1\"\nca_file = "
      "\"/etc/hostname\"\n",
      "cairva.toml");
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_EQ(ok->providers[0].ca_file, "/etc/hostname");
}

TEST_F(ConfigTest, ProviderLimitFieldDefaultsToMaxCompletionTokensAndAcceptsMaxTokens) {
  auto r = parse_config(
      "[[providers]]\nname = \"a\"\nbase_url = \"http://a\"\n"
      "[[providers]]\nname = \"b\"\nbase_url = \"http://b\"\nlimit_field = \"max_tokens\"\n"
      "[[providers]]\nname = \"c\"\nbase_url = \"http://c\"\nlimit_field = "
      "\"max_completion_tokens\"\n",
      "cairva.toml");
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->providers.size(), 3u);
  EXPECT_EQ(r->providers[0].limit_field, "max_completion_tokens");
  EXPECT_EQ(r->providers[1].limit_field, "max_tokens");
  EXPECT_EQ(r->providers[2].limit_field, "max_completion_tokens");
}

TEST_F(ConfigTest, RefusesAnyOtherProviderLimitFieldNamingFileAndKey) {
  EXPECT_EQ(error_of("[[providers]]\nname = \"a\"\nbase_url = \"http://a\"\nlimit_field = "
                     "\"max_output_tokens\"\n"),
            "cairva.toml: providers[0].limit_field: expected \"max_completion_tokens\" or "
            "\"max_tokens\", "
            "got \"max_output_tokens\"");
  EXPECT_EQ(error_of("[[providers]]\nname = \"a\"\nbase_url = \"http://a\"\nlimit_field = 1\n"),
            "cairva.toml: providers[0].limit_field: expected a string, got an integer");
}

TEST_F(ConfigTest, ProviderKindDefaultsToOpenaiAndAcceptsAnthropic) {
  auto r = parse_config(
      "[[providers]]\nname = \"a\"\nbase_url = \"http://a\"\n"
      "[[providers]]\nname = \"b\"\nkind = \"anthropic\"\nbase_url = \"http://b/v1\"\n"
      "[[providers]]\nname = \"c\"\nkind = \"openai\"\nbase_url = \"http://c\"\n",
      "cairva.toml");
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->providers.size(), 3u);
  EXPECT_EQ(r->providers[0].kind, ProviderKind::openai);
  EXPECT_EQ(r->providers[1].kind, ProviderKind::anthropic);
  EXPECT_EQ(r->providers[2].kind, ProviderKind::openai);
}

TEST_F(ConfigTest, RefusesAnUnknownProviderKindNamingFileAndKey) {
  EXPECT_EQ(error_of("[[providers]]\nname = \"a\"\nkind = \"gemini\"\nbase_url = \"http://a\"\n"),
            "cairva.toml: providers[0].kind: expected \"openai\" or \"anthropic\", got \"gemini\"");
  EXPECT_EQ(error_of("[[providers]]\nname = \"a\"\nkind = 2\nbase_url = \"http://a\"\n"),
            "cairva.toml: providers[0].kind: expected a string, got an integer");
}

TEST_F(ConfigTest, RefusesUnknownKeyInEveryTable) {
  EXPECT_EQ(error_of("[server]\nlisten_addr = \"a:1\"\n"),
            "cairva.toml: server.listen_addr: unknown key");
  EXPECT_EQ(error_of("[admin]\ntoken = \"x\"\n"), "cairva.toml: admin.token: unknown key");
  EXPECT_EQ(error_of("[store]\npath = \"x\"\n"), "cairva.toml: store.path: unknown key");
  EXPECT_EQ(error_of("[holds]\nmax_tokens = 3\n"), "cairva.toml: holds.max_tokens: unknown key");
  EXPECT_EQ(error_of("[[providers]]\nname = \"a\"\nbase_url = \"http://a\"\nkey = \"x\"\n"),
            "cairva.toml: providers[0].key: unknown key");
  EXPECT_EQ(error_of("[store.extra]\nx = 1\n"), "cairva.toml: store.extra: unknown table");
}

TEST_F(ConfigTest, RefusesWrongTypes) {
  EXPECT_EQ(error_of("[server]\nlisten = 8080\n"),
            "cairva.toml: server.listen: expected a string, got an integer");
  EXPECT_EQ(error_of("[holds]\ndefault_max_tokens = \"x\"\n"),
            "cairva.toml: holds.default_max_tokens: expected an integer, got a string");
  EXPECT_EQ(error_of("[store]\npool_size = 8.5\n"),
            "cairva.toml: store.pool_size: expected an integer, got a float");
  EXPECT_EQ(error_of("server = 3\n"), "cairva.toml: server: expected a table, got an integer");
  EXPECT_EQ(error_of("[providers]\nname = \"a\"\n"),
            "cairva.toml: providers: expected an array of tables ([[providers]]), got a table");
  EXPECT_EQ(error_of("[server]\nthreads = true\n"),
            "cairva.toml: server.threads: expected an integer, got a boolean");
  EXPECT_EQ(error_of("[server]\naccess_log = \"yes\"\n"),
            "cairva.toml: server.access_log: expected true or false, got a string");
}

TEST_F(ConfigTest, RefusesListenAddressWithoutHostAndPort) {
  for (const char* bad : {"8080", ":8080", "localhost:", "localhost:http", "h:70000", "::1:80"}) {
    const std::string msg = error_of(std::string("[server]\nlisten = \"") + bad + "\"\n");
    EXPECT_EQ(msg.rfind("cairva.toml: server.listen: expected HOST:PORT", 0), 0u)
        << bad << " -> " << msg;
  }
  EXPECT_NE(error_of("[server]\nadmin_listen = \"nope\"\n")
                .find("server.admin_listen: expected HOST:PORT"),
            std::string::npos);
}

TEST_F(ConfigTest, RefusesBadStoreValues) {
  EXPECT_EQ(
      error_of("[store]\nurl = \"mysql://x\"\n"),
      "cairva.toml: store.url: expected sqlite://PATH or postgresql://..., got \"mysql://x\"");
  EXPECT_NE(error_of("[store]\nurl = \"sqlite://\"\n").find("store.url"), std::string::npos);
  EXPECT_EQ(error_of("[store]\nsync = \"off\"\n"),
            "cairva.toml: store.sync: expected \"normal\" or \"full\", got \"off\"");
  EXPECT_EQ(error_of("[store]\npool_size = 0\n"),
            "cairva.toml: store.pool_size: must be between 1 and 256, got 0");
  EXPECT_EQ(error_of("[store]\npool_size = 257\n"),
            "cairva.toml: store.pool_size: must be between 1 and 256, got 257");
}

TEST_F(ConfigTest, RefusesNonPositiveHolds) {
  EXPECT_NE(error_of("[holds]\ndefault_max_tokens = 0\n")
                .find("holds.default_max_tokens: must be between 1"),
            std::string::npos);
  EXPECT_NE(error_of("[holds]\nin_flight_timeout_s = -5\n")
                .find("holds.in_flight_timeout_s: must be between 1"),
            std::string::npos);
  EXPECT_NE(error_of("[server]\nthreads = -1\n").find("server.threads: must be between 0"),
            std::string::npos);
}

TEST_F(ConfigTest, RefusesEmptyAdminTokenEnv) {
  EXPECT_EQ(error_of("[admin]\ntoken_env = \"\"\n"),
            "cairva.toml: admin.token_env: must name an environment variable, got \"\"");
}

TEST_F(ConfigTest, RefusesProviderWithoutNameOrBaseUrl) {
  EXPECT_EQ(error_of("[[providers]]\nbase_url = \"http://a\"\n"),
            "cairva.toml: providers[0].name: required: a non-empty provider name");
  EXPECT_EQ(error_of("[[providers]]\nname = \"\"\nbase_url = \"http://a\"\n"),
            "cairva.toml: providers[0].name: required: a non-empty provider name");
  EXPECT_EQ(error_of("[[providers]]\nname = \"a\"\n"),
            "cairva.toml: providers[0].base_url: required: the provider's http(s) URL");
}

TEST_F(ConfigTest, RefusesDuplicateProviderName) {
  EXPECT_EQ(error_of("[[providers]]\nname = \"a\"\nbase_url = \"http://a\"\n"
                     "[[providers]]\nname = \"a\"\nbase_url = \"http://b\"\n"),
            "cairva.toml: providers[1].name: duplicate provider name \"a\"");
}

TEST_F(ConfigTest, RefusesNonHttpBaseUrl) {
  for (const char* bad : {"ftp://a/v1", "api.openai.com/v1", "https://", "not a url"}) {
    const std::string msg =
        error_of(std::string("[[providers]]\nname = \"a\"\nbase_url = \"") + bad + "\"\n");
    EXPECT_EQ(
        msg.rfind("cairva.toml: providers[0].base_url: expected an http:// or https:// URL", 0), 0u)
        << bad << " -> " << msg;
  }
}

TEST_F(ConfigTest, RefusesMissingOrEmptyProviderKeyEnvNamingIt) {
  EXPECT_EQ(
      error_of("[[providers]]\nname = \"a\"\nbase_url = \"http://a\"\napi_key_env = "
               "\"CAIRVA_TEST_MISSING_KEY\"\n"),
      "cairva.toml: providers[0].api_key_env: environment variable CAIRVA_TEST_MISSING_KEY is not "
      "set or empty (it must hold the provider's API key)");
  EXPECT_NE(error_of("[[providers]]\nname = \"a\"\nbase_url = \"http://a\"\napi_key_env = "
                     "\"CAIRVA_TEST_EMPTY_KEY\"\n")
                .find("CAIRVA_TEST_EMPTY_KEY is not set or empty"),
            std::string::npos);
}

TEST_F(ConfigTest, RefusesBadProviderTimeout) {
  EXPECT_NE(error_of("[[providers]]\nname = \"a\"\nbase_url = \"http://a\"\ntimeout_s = 0\n")
                .find("providers[0].timeout_s: must be between 1"),
            std::string::npos);
}

TEST_F(ConfigTest, TomlSyntaxErrorNamesFileAndLine) {
  const std::string msg = error_of("[server]\nlisten = \"a:1\n");
  EXPECT_EQ(msg.rfind("cairva.toml: line 2", 0), 0u) << msg;
}

TEST_F(ConfigTest, LoadsFileAndNamesMissingFile) {
  char path[] = "/tmp/cairva-config-test-XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  {
    std::ofstream out(path);
    out << "[holds]\ndefault_max_tokens = 7\n";
  }
  auto r = load_config_file(path);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->default_max_tokens, 7);
  EXPECT_EQ(r->source, path);
  {
    std::ofstream out(path);
    out << "[holds]\ndefault_max_tokens = 0\n";
  }
  auto bad = load_config_file(path);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message.rfind(std::string(path) + ": holds.default_max_tokens:", 0), 0u);
  std::remove(path);
  auto missing = load_config_file(path);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().message, std::string(path) + ": cannot open the config file");
}

}  // namespace
}  // namespace cairva::config

namespace cairva::config {
namespace {

TEST(ConfigServerLimits, ReadsTheListenerBudgetsAndChecksTheirRanges) {
  auto d = parse_config("", "c.toml");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->connections_max, connections_max_default);
  EXPECT_EQ(d->connections_per_client_max, connections_per_client_max_default);
  EXPECT_EQ(d->first_byte_timeout_s, first_byte_timeout_s_default);
  EXPECT_EQ(d->body_bytes_in_flight_max, body_bytes_in_flight_max_default);
  auto r = parse_config(
      "[server]\nconnections_max = 200\nconnections_per_client_max = 0\nfirst_byte_timeout_s = 2\n"
      "body_bytes_in_flight_max = 67108864\n",
      "c.toml");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->connections_max, 200);
  EXPECT_EQ(r->connections_per_client_max, 0);
  EXPECT_EQ(r->first_byte_timeout_s, 2);
  EXPECT_EQ(r->body_bytes_in_flight_max, int64_t{64} << 20);
  auto error_of = [](const std::string& text) {
    auto bad = parse_config(text, "c.toml");
    return bad.ok() ? std::string("accepted") : bad.error().message;
  };
  EXPECT_EQ(error_of("[server]\nconnections_max = 0\n")
                .rfind("c.toml: server.connections_max: must be between 1", 0),
            0u);
  EXPECT_EQ(error_of("[server]\nconnections_per_client_max = -1\n")
                .rfind("c.toml: server.connections_per_client_max: must be between 0", 0),
            0u);
  EXPECT_EQ(error_of("[server]\nfirst_byte_timeout_s = 0\n")
                .rfind("c.toml: server.first_byte_timeout_s: must be between 1", 0),
            0u);
  EXPECT_EQ(error_of("[server]\nbody_bytes_in_flight_max = 1048576\n"),
            "c.toml: server.body_bytes_in_flight_max: must be between 33554432 and 1099511627776, "
            "got 1048576");
  EXPECT_EQ(error_of("[server]\nfirst_byte_timeout = 2\n"),
            "c.toml: server.first_byte_timeout: unknown key");
}

TEST(ConfigServerDrain, ReadsTheDrainTimeoutAndChecksItsRange) {
  auto d = parse_config("", "c.toml");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->drain_timeout_s, drain_timeout_s_default);
  for (const int64_t v : {int64_t{0}, int64_t{5}, int64_t{86'400}}) {
    auto r = parse_config("[server]\ndrain_timeout_s = " + std::to_string(v) + "\n", "c.toml");
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(r->drain_timeout_s, v);
  }
  auto negative = parse_config("[server]\ndrain_timeout_s = -1\n", "c.toml");
  ASSERT_FALSE(negative.ok());
  EXPECT_EQ(negative.error().message,
            "c.toml: server.drain_timeout_s: must be between 0 and 86400, got -1");
  auto text = parse_config("[server]\ndrain_timeout_s = \"30s\"\n", "c.toml");
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.error().message,
            "c.toml: server.drain_timeout_s: expected an integer, got a string");
}

TEST(ConfigServerAccessLog, ReadsTheFormatAndPathAndChecksThem) {
  auto d = parse_config("", "c.toml");
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->access_log);
  EXPECT_FALSE(d->access_log_json);
  EXPECT_EQ(d->access_log_path, "");
  auto r = parse_config(
      "[server]\naccess_log_format = \"json\"\naccess_log_path = \"/var/log/cairva/access.log\"\n",
      "c.toml");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE(r->access_log_json);
  EXPECT_EQ(r->access_log_path, "/var/log/cairva/access.log");
  auto text = parse_config("[server]\naccess_log_format = \"text\"\n", "c.toml");
  ASSERT_TRUE(text.ok());
  EXPECT_FALSE(text->access_log_json);
  auto bad = parse_config("[server]\naccess_log_format = \"xml\"\n", "c.toml");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message,
            "c.toml: server.access_log_format: expected \"text\" or \"json\", got \"xml\"");
  auto empty = parse_config("[server]\naccess_log_path = \"\"\n", "c.toml");
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.error().message.rfind("c.toml: server.access_log_path: expected a file path", 0),
            0u);
}

}  // namespace
}  // namespace cairva::config
