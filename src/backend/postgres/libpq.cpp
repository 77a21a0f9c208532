#include "backend/postgres/libpq.hpp"

#include "core/runtime_library.hpp"

namespace dlock::backend::postgres {

namespace {

template <typename Function> void bind(void *handle, Function &target, const char *name) {
  runtime_library::bind(handle, "libpq.so.5", target, name, ": libpq 12 or later is needed");
}

Libpq load() {
  // Loaded for good: libpq registers handlers of its own (OpenSSL).
  void *handle = runtime_library::open("libpq.so.5", "the postgres backend needs libpq (Debian: apt install libpq5)");
  Libpq api{};
  bind(handle, api.connectStartParams, "PQconnectStartParams");
  bind(handle, api.connectPoll, "PQconnectPoll");
  bind(handle, api.status, "PQstatus");
  bind(handle, api.socket, "PQsocket");
  bind(handle, api.errorMessage, "PQerrorMessage");
  bind(handle, api.finish, "PQfinish");
  bind(handle, api.setnonblocking, "PQsetnonblocking");
  bind(handle, api.sendQueryParams, "PQsendQueryParams");
  bind(handle, api.flush, "PQflush");
  bind(handle, api.consumeInput, "PQconsumeInput");
  bind(handle, api.isBusy, "PQisBusy");
  bind(handle, api.getResult, "PQgetResult");
  bind(handle, api.resultStatus, "PQresultStatus");
  bind(handle, api.resultErrorField, "PQresultErrorField");
  bind(handle, api.resultErrorMessage, "PQresultErrorMessage");
  bind(handle, api.ntuples, "PQntuples");
  bind(handle, api.nfields, "PQnfields");
  bind(handle, api.getvalue, "PQgetvalue");
  bind(handle, api.getisnull, "PQgetisnull");
  bind(handle, api.clear, "PQclear");
  bind(handle, api.getCancel, "PQgetCancel");
  bind(handle, api.cancel, "PQcancel");
  bind(handle, api.freeCancel, "PQfreeCancel");
  bind(handle, api.serverVersion, "PQserverVersion");
  bind(handle, api.parameterStatus, "PQparameterStatus");
  bind(handle, api.connectionNeedsPassword, "PQconnectionNeedsPassword");
  bind(handle, api.connectionUsedPassword, "PQconnectionUsedPassword");
  bind(handle, api.backendPID, "PQbackendPID");
  bind(handle, api.conninfoParse, "PQconninfoParse");
  bind(handle, api.conninfoFree, "PQconninfoFree");
  bind(handle, api.setNoticeProcessor, "PQsetNoticeProcessor");
  bind(handle, api.freemem, "PQfreemem");
  bind(handle, api.notifies, "PQnotifies");
  return api;
}

} // namespace

const Libpq &libpq() {
  static runtime_library::Loaded<Libpq> loaded(load);
  return loaded.get();
}

} // namespace dlock::backend::postgres
