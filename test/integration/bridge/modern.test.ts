// In-process, 2026-07-28 traffic: headers from each body, x-mcp-header, pass-through and modern errors.

import { inProcessMode } from '../../helpers/bridge-mode.js';
import { defineModernSuite } from '../../suites/modern.js';

defineModernSuite(inProcessMode);
