// End-to-end: every stdin line that is not one JSON-RPC 2.0 message gets exactly the reply it should, from the built bin.

import { spawnedMode } from '../helpers/bridge-mode.js';
import { defineLinesSuite } from '../suites/lines.js';

defineLinesSuite(spawnedMode);
