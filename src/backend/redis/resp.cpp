#include "backend/redis/resp.hpp"

#include "core/error.hpp"

#include <fmt/format.h>
#include <hiredis/hiredis.h>

#include <new>

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

// hiredis allocates an array's element pointers as soon as it has read the
// header: "*100000000\r\n", 12 bytes from a hostile server, would cost
// 800 MB. No reply dlock asks for has more than a few thousand elements;
// a longer array is refused (hiredis then reports a protocol error).
constexpr int k_max_array_elements = 1 << 20;

void *(*g_create_array)(const redisReadTask *, int) = nullptr;

void *create_bounded_array(const redisReadTask *task, int elements) {
  if (elements > k_max_array_elements) return nullptr;
  return g_create_array(task, elements);
}

// hiredis' own reply functions, with the array bound.
redisReader *create_reader() {
  static redisReplyObjectFunctions functions = [] {
    redisReader *plain = redisReaderCreate();
    if (!plain) throw std::bad_alloc();
    redisReplyObjectFunctions copy = *plain->fn;
    redisReaderFree(plain);
    g_create_array = copy.createArray;
    copy.createArray = create_bounded_array;
    return copy;
  }();
  redisReader *reader = redisReaderCreateWithFunctions(&functions);
  if (!reader) throw std::bad_alloc();
  return reader;
}

template <typename Range> void append_range(std::string &out, std::size_t count, const Range &args) {
  out += fmt::format("*{}\r\n", count);
  for (std::string_view arg : args) {
    out += fmt::format("${}\r\n", arg.size());
    out.append(arg);
    out += "\r\n";
  }
}

} // namespace

std::string_view Reply::error_code() const {
  std::string_view text = str;
  return text.substr(0, text.find(' '));
}

void append_command(std::string &out, std::initializer_list<std::string_view> args) {
  append_range(out, args.size(), args);
}

void append_command(std::string &out, const std::vector<std::string> &args) { append_range(out, args.size(), args); }

ReplyParser::ReplyParser() : m_reader(create_reader()) {}

ReplyParser::~ReplyParser() { redisReaderFree(m_reader); }

void ReplyParser::reset() {
  redisReaderFree(m_reader);
  m_reader = nullptr;
  m_reader = create_reader();
}

void ReplyParser::feed(const char *data, std::size_t size) {
  if (redisReaderFeed(m_reader, data, size) != REDIS_OK) throw std::bad_alloc();
}

std::optional<Reply> ReplyParser::next() {
  void *raw = nullptr;
  if (redisReaderGetReply(m_reader, &raw) != REDIS_OK)
    throw UnavailableError(fmt::format("malformed reply from the server: {}", m_reader->errstr));
  if (!raw) return std::nullopt;
  Reply reply = convert(*static_cast<redisReply *>(raw));
  freeReplyObject(raw);
  return reply;
}

} // namespace dlock::backend::redis
