// In-process: every way the remote side can fail costs one error reply with the request's id; the bridge survives and stays quiet about secrets.

import { inProcessMode } from '../../helpers/bridge-mode.js';
import { defineFailuresSuite } from '../../suites/failures.js';

defineFailuresSuite(inProcessMode);
