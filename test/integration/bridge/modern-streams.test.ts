// In-process, 2026-07-28 streams: cancelling closes the exchange, listen streams never time out, quiet calls live on.

import { inProcessMode } from '../../helpers/bridge-mode.js';
import { defineModernStreamsSuite } from '../../suites/modern-streams.js';

defineModernStreamsSuite(inProcessMode);
