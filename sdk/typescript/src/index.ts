// @briefd/client: briefd's agent SDK for TypeScript. See README.md and the
// repository's docs/protocol.md.

export * from "./types.js";
export { encodeMessage, encodeContent, goString, normalizeMessage } from "./json.js";
export {
  BriefingIDPrefix,
  contentText,
  DefaultMaxIDLength,
  DefaultMaxMessageBytes,
  DefaultMaxMessages,
  DefaultMaxTotalBytes,
  isBriefing,
  isBriefingID,
  KindBriefing,
  type Limits as ValidationLimits,
  messageSize,
  MetaBoundary,
  MetaKind,
  MetaPosition,
  validate,
  ValidationError,
} from "./message.js";
export {
  BoundaryMissingError,
  briefingMessage,
  CloseTag,
  escapeBriefing,
  expandFooter,
  NothingToSpliceError,
  OpenTag,
  splice,
  unwrapBriefing,
  wrapBriefing,
} from "./splice.js";
export { bodyHash, decodeManifest, InvalidIDError, kvBucket, MalformedError, streamNames, Subjects, validToken } from "./protocol.js";
export {
  BodyTooLargeError,
  MaxPayloadTooSmallError,
  MinChunkBytes,
  Pending,
  Publisher,
  SupersededError,
  type Limits,
  type LogFn,
  type PublishOptions,
  type PublishResult,
  type PublisherOptions,
  type Control,
  encodeControl,
} from "./publisher.js";
export { BodyMissingError, OriginalOrder, Reader, zstdContentSize } from "./reader.js";
export {
  DefaultExpandMaxBytes,
  DefaultExpandMaxMessages,
  DefaultSearchMaxMatches,
  ExpandToolName,
  expandTool,
  ExpiredError,
  InvalidQueryError,
  MaxQueryLength,
  NoBriefingError,
  RegexpTimeoutMs,
  UnknownMessageError,
  type ExpandLimits,
  type ExpandToolArgs,
  type Expansion,
  type SearchMatch,
  type SearchResult,
} from "./expand.js";
export { BriefdClient, BufferFullError, ClosedError, type ClientOptions, type RedisLike, type Stats } from "./client.js";
