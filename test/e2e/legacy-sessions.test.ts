// 2025-era sessions end to end: expiry and re-initialization, the listen stream, resumption, cancel, goodbye.

import { spawnedMode } from '../helpers/bridge-mode.js';
import { defineLegacySessionSuite } from '../suites/legacy-sessions.js';

defineLegacySessionSuite(spawnedMode);
