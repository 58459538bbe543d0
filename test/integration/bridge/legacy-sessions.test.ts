// In-process, 2025-era sessions: expiry and re-initialization, the listen stream, resumption, cancel, goodbye.

import { inProcessMode } from '../../helpers/bridge-mode.js';
import { defineLegacySessionSuite } from '../../suites/legacy-sessions.js';

defineLegacySessionSuite(inProcessMode);
