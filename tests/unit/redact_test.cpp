#include "core/identity.hpp"
#include "core/redact.hpp"

#include <catch2/catch.hpp>

using namespace dlock;

// Holder records are readable by anyone who can read the backend (issue 34
// point 2): the command lines that go into them keep no secret.
TEST_CASE("redact_secrets hides URL userinfo") {
  CHECK(redact_secrets("dlock -b redis://:hunter2@db:6379 acquire x") == "dlock -b redis://***@db:6379 acquire x");
  CHECK(redact_secrets("dlock -b zk://alice:hunter2@h1:2181,h2:2181/app acquire x") ==
        "dlock -b zk://***@h1:2181,h2:2181/app acquire x");
  CHECK(redact_secrets("psql 'postgresql://bob:s3cr%40t@db/app?sslmode=require'") ==
        "psql 'postgresql://***@db/app?sslmode=require'");
  // No userinfo: nothing to hide.
  CHECK(redact_secrets("curl https://example.com/a@b") == "curl https://example.com/a@b");
  CHECK(redact_secrets("dlock -b redis://db:6379/0 run x -- true") == "dlock -b redis://db:6379/0 run x -- true");
}

TEST_CASE("redact_secrets hides the values of secret assignments") {
  CHECK(redact_secrets("sh -c DLOCK_PASSWORD=hunter2 dlock acquire x") == "sh -c DLOCK_PASSWORD=*** dlock acquire x");
  CHECK(redact_secrets("env PGPASSWORD=hunter2 MYSQL_PWD=x2 GITHUB_TOKEN=ghp_1 AWS_SECRET_ACCESS_KEY=k psql") ==
        "env PGPASSWORD=*** MYSQL_PWD=*** GITHUB_TOKEN=*** AWS_SECRET_ACCESS_KEY=*** psql");
  CHECK(redact_secrets("sh -c 'PGPASSWORD=hunter2 pg_dump app'") == "sh -c 'PGPASSWORD=*** pg_dump app'");
  // A quoted value is hidden to its closing quote, spaces and all.
  CHECK(redact_secrets("sh -c 'API_KEY=\"a b c\" job'") == "sh -c 'API_KEY=*** job'");
  // In a query string, and as --option=value.
  CHECK(redact_secrets("psql postgres://db/app?user=u&password=hunter2&sslmode=require") ==
        "psql postgres://db/app?user=u&password=***&sslmode=require");
  CHECK(redact_secrets("job --password=hunter2 --db-token=t --user=bob") ==
        "job --password=*** --db-token=*** --user=bob");
  // Keys that name no secret stay.
  CHECK(redact_secrets("env PATH=/bin HOME=/root LANG=C job --mode=fast") ==
        "env PATH=/bin HOME=/root LANG=C job --mode=fast");
}

TEST_CASE("redact_secrets hides the word after an option that names a secret") {
  CHECK(redact_secrets("dlock --password-file /etc/dlock/pw acquire x") == "dlock --password-file *** acquire x");
  CHECK(redact_secrets("job --password hunter2 --verbose") == "job --password *** --verbose");
  CHECK(redact_secrets("job --token 'a b' next") == "job --token *** next");
  CHECK(redact_secrets("redis-cli -h db -a hunter2 ping") == "redis-cli -h db -a *** ping");
  CHECK(redact_secrets("/usr/bin/mysql -u root -phunter2 app") == "/usr/bin/mysql -u root -p*** app");
  CHECK(redact_secrets("curl -u bob:hunter2 https://x") == "curl -u bob:*** https://x");
  CHECK(redact_secrets("curl --user=bob:hunter2 https://x") == "curl --user=bob:*** https://x");
  CHECK(redact_secrets("curl -H 'Authorization: Bearer abc.def' https://x") ==
        "curl -H 'Authorization: Bearer ***' https://x");
  // -a and -p mean other things elsewhere.
  CHECK(redact_secrets("ls -a /tmp") == "ls -a /tmp");
  CHECK(redact_secrets("tar -p -cf x.tar dir") == "tar -p -cf x.tar dir");
}

TEST_CASE("redact_secrets leaves ordinary command lines as they are") {
  for (const char *line : {"", "true", "./nightly-report.sh --full", "sh -c 'echo \"$DLOCK_FENCE\" >> log'",
                           "dlock run x -- sleep 10", "a  b\tc"})
    CHECK(redact_secrets(line) == line);
}

TEST_CASE("holder commands are redacted before they are cut") {
  std::string secret(300, 'S');
  std::string joined = join_command({"env", "PGPASSWORD=" + secret, "psql"}, 256);
  CHECK(joined == "env PGPASSWORD=*** psql");
  // A secret at the cut: no part of it is left.
  std::string long_line = join_command({std::string(240, 'x'), "DLOCK_PASSWORD=" + std::string(300, 'Q')}, 256);
  CHECK(long_line.find('Q') == std::string::npos);
}
