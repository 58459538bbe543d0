// End-to-end, 2026-07-28 traffic: headers from each body, x-mcp-header, pass-through and modern errors.

import { spawnedMode } from '../helpers/bridge-mode.js';
import { defineModernSuite } from '../suites/modern.js';

defineModernSuite(spawnedMode);
