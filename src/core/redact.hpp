#pragma once

#include <string>
#include <string_view>

namespace dlock {

// A command line with its secrets replaced by "***", for holder records
// (which status and list show to anyone who can read the backend) and for
// messages that name a process. What counts as a secret:
//   - the userinfo of a URL (scheme://user:pass@host: "scheme://***@host");
//   - the value of an assignment whose key names a secret, anywhere in a
//     word: PGPASSWORD=..., DLOCK_PASSWORD=..., api_token=..., a query's
//     &password=..., --password=...; the key names a secret when it
//     contains password, passwd, passphrase, secret, token, credential,
//     auth, apikey, api_key, api-key, private_key, access_key, or is
//     pass, pwd or ends in _pwd;
//   - the word after an option that names one (--password X, --token X,
//     --auth X; also after -a of redis-cli and curl's -u/--user when it
//     carries user:password) and after "Bearer" and "Basic";
//   - mysql's and mariadb's -pPASSWORD.
// Quoted values ('a b', "a b") are redacted to their closing quote. The
// rules err on the side of hiding: a harmless value that looks like a
// secret's is hidden too.
std::string redact_secrets(std::string_view line);

} // namespace dlock
