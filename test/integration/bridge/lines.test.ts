// In-process: every stdin line that is not one JSON-RPC 2.0 message gets exactly the reply it should (src/ coverage).

import { inProcessMode } from '../../helpers/bridge-mode.js';
import { defineLinesSuite } from '../../suites/lines.js';

defineLinesSuite(inProcessMode);
