#include "backend/redis/resp.hpp"

#include "core/error.hpp"

#include <fmt/format.h>
#include <hiredis/hiredis.h>

#include <new>
#include <string_view>

namespace dlock::backend::redis {

namespace {

Reply convert(const redisReply &raw) {
  Reply reply;
  switch (raw.type) {
  case REDIS_REPLY_STRING:
    reply.type = Reply::Type::string;
    break;
  case REDIS_REPLY_STATUS:
    reply.type = Reply::Type::status;
    break;
  case REDIS_REPLY_ERROR:
    reply.type = Reply::Type::error;
    break;
  case REDIS_REPLY_INTEGER:
    reply.type = Reply::Type::integer;
    reply.integer = raw.integer;
    return reply;
  case REDIS_REPLY_ARRAY:
    reply.type = Reply::Type::array;
    reply.elements.reserve(raw.elements);
    for (std::size_t i = 0; i < raw.elements; ++i)
      reply.elements.push_back(convert(*raw.element[i]));
    return reply;
  default:
    reply.type = Reply::Type::nil;
    return reply;
  }
  reply.str.assign(raw.str, raw.len);
  return reply;
}

template <typename Range> void append_range(std::string &out, std::size_t count, const Range &args) {
  out += fmt::format("*{}\r\n", count);
  for (std::string_view arg : args) {
    out += fmt::format("${}\r\n", arg.size());
    out.append(arg);
    out += "\r\n";
  }
}

// hiredis' own reply constructors, each counting against the limit of the
// parser that is reading (one per thread at a time: next() sets it).
thread_local std::size_t *t_values = nullptr;
redisReplyObjectFunctions g_default{};
redisReplyObjectFunctions g_counting{};

bool over_limit(std::size_t more = 1) {
  if (!t_values) return false;
  *t_values += more;
  return *t_values > ReplyParser::k_max_values;
}

void *create_string(const redisReadTask *task, char *text, size_t size) {
  return over_limit() ? nullptr : g_default.createString(task, text, size);
}
void *create_array(const redisReadTask *task, int elements) {
  // Checked before hiredis allocates room for `elements` pointers.
  return over_limit(1 + static_cast<std::size_t>(elements < 0 ? 0 : elements)) ? nullptr
                                                                               : g_default.createArray(task, elements);
}
void *create_integer(const redisReadTask *task, long long value) {
  return over_limit() ? nullptr : g_default.createInteger(task, value);
}
void *create_nil(const redisReadTask *task) { return over_limit() ? nullptr : g_default.createNil(task); }

} // namespace

std::string_view Reply::error_code() const {
  std::string_view text = str;
  return text.substr(0, text.find(' '));
}

long long Reply::expect_integer(std::string_view where, std::string_view what) const {
  if (type != Type::integer) throw UnavailableError(fmt::format("{}: unexpected reply to {}", where, what));
  return integer;
}

void append_command(std::string &out, std::initializer_list<std::string_view> args) {
  append_range(out, args.size(), args);
}

void append_command(std::string &out, const std::vector<std::string> &args) { append_range(out, args.size(), args); }

ReplyParser::ReplyParser() { create(); }

ReplyParser::~ReplyParser() { redisReaderFree(m_reader); }

void ReplyParser::create() {
  m_reader = redisReaderCreate();
  if (!m_reader) throw std::bad_alloc();
  static const bool wrapped = [this] {
    g_default = *m_reader->fn;
    g_counting = {create_string, create_array, create_integer, create_nil, g_default.freeObject};
    return true;
  }();
  (void)wrapped;
  m_reader->fn = &g_counting;
  m_fed = m_reply_start = m_values = 0;
}

void ReplyParser::reset() {
  redisReaderFree(m_reader);
  m_reader = nullptr;
  create();
}

void ReplyParser::feed(const char *data, std::size_t size) {
  if (redisReaderFeed(m_reader, data, size) != REDIS_OK) throw std::bad_alloc();
  m_fed += size;
}

std::size_t ReplyParser::pending() const { return m_fed - m_reply_start; }

std::optional<Reply> ReplyParser::next() {
  void *raw = nullptr;
  t_values = &m_values;
  int status = redisReaderGetReply(m_reader, &raw);
  t_values = nullptr;
  if (status != REDIS_OK) {
    if (m_values > k_max_values)
      throw UnavailableError(fmt::format("reply of more than {} values: not a server dlock can talk to", k_max_values));
    throw UnavailableError(fmt::format("malformed reply from the server: {}", m_reader->errstr));
  }
  if (!raw) return std::nullopt;
  m_values = 0;
  m_reply_start = m_fed - (m_reader->len - m_reader->pos);
  Reply reply = convert(*static_cast<redisReply *>(raw));
  freeReplyObject(raw);
  return reply;
}

} // namespace dlock::backend::redis
