// The protocol's names: the revisions the bridge speaks, the `_meta` keys of 2026-07-28, the two eras.

/** The stateless revision: no session, every request carries its own `_meta` (2026-07-28 basic). */
export const MODERN_VERSION = '2026-07-28';

/** The session revision the bridge's own clients (doctor, shell commands) ask for in `initialize`. */
export const SESSION_VERSION = '2025-06-18';

/** `_meta` keys of a 2026-07-28 request (2026-07-28 basic §Request `_meta`, schema RequestMetaObject). */
export const MODERN_VERSION_META_KEY = 'io.modelcontextprotocol/protocolVersion';
export const CLIENT_CAPABILITIES_META_KEY = 'io.modelcontextprotocol/clientCapabilities';
export const CLIENT_INFO_META_KEY = 'io.modelcontextprotocol/clientInfo';
export const LOG_LEVEL_META_KEY = 'io.modelcontextprotocol/logLevel';
/** The key under which a 2026-07-28 result names its server (2026-07-28 basic §Result `_meta`). */
export const SERVER_INFO_META_KEY = 'io.modelcontextprotocol/serverInfo';
/** The prefix of the `_meta` keys above: reserved for the protocol's own fields (basic §`_meta`, key name prefixes). */
export const PROTOCOL_META_PREFIX = 'io.modelcontextprotocol/';

/** Which era a server speaks: `legacy` is the 2025 session era, `modern` the 2026-07-28 stateless one. */
export type Era = 'legacy' | 'modern';
