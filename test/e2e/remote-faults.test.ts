// End-to-end, remote faults: every request still gets exactly one reply, stdout stays JSON-RPC, the bridge lives on.

import { spawnedMode } from '../helpers/bridge-mode.js';
import { defineFaultsSuite } from '../suites/faults.js';

defineFaultsSuite(spawnedMode);
