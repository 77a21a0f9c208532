#pragma once

#include <libpq-fe.h>

namespace dlock::backend::postgres {

// libpq, loaded with dlopen the first time a postgres:// URL is used: a
// dlock that never talks to PostgreSQL does not map libpq and the dozen
// libraries it pulls in (TLS, Kerberos, LDAP), which would cost every run
// start-up time. The types come from libpq-fe.h at build time.
struct Libpq {
  decltype(&::PQconnectStartParams) connectStartParams;
  decltype(&::PQconnectPoll) connectPoll;
  decltype(&::PQstatus) status;
  decltype(&::PQsocket) socket;
  decltype(&::PQerrorMessage) errorMessage;
  decltype(&::PQfinish) finish;
  decltype(&::PQsetnonblocking) setnonblocking;
  decltype(&::PQsendQueryParams) sendQueryParams;
  decltype(&::PQflush) flush;
  decltype(&::PQconsumeInput) consumeInput;
  decltype(&::PQisBusy) isBusy;
  decltype(&::PQgetResult) getResult;
  decltype(&::PQresultStatus) resultStatus;
  decltype(&::PQresultErrorField) resultErrorField;
  decltype(&::PQresultErrorMessage) resultErrorMessage;
  decltype(&::PQntuples) ntuples;
  decltype(&::PQnfields) nfields;
  decltype(&::PQgetvalue) getvalue;
  decltype(&::PQgetisnull) getisnull;
  decltype(&::PQclear) clear;
  decltype(&::PQgetCancel) getCancel;
  decltype(&::PQcancel) cancel;
  decltype(&::PQfreeCancel) freeCancel;
  decltype(&::PQserverVersion) serverVersion;
  decltype(&::PQparameterStatus) parameterStatus;
  decltype(&::PQconnectionNeedsPassword) connectionNeedsPassword;
  decltype(&::PQconnectionUsedPassword) connectionUsedPassword;
  decltype(&::PQbackendPID) backendPID;
  decltype(&::PQconninfoParse) conninfoParse;
  decltype(&::PQconninfoFree) conninfoFree;
  decltype(&::PQsetNoticeProcessor) setNoticeProcessor;
  decltype(&::PQfreemem) freemem;
  decltype(&::PQnotifies) notifies;
};

// The loaded library; throws ConfigError (78) naming what to install when
// libpq.so.5 cannot be loaded.
const Libpq &libpq();

} // namespace dlock::backend::postgres
