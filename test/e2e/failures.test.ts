// End-to-end: every way the remote side can fail costs one error reply with the request's id; the process survives and stays quiet about secrets.

import { spawnedMode } from '../helpers/bridge-mode.js';
import { defineFailuresSuite } from '../suites/failures.js';

defineFailuresSuite(spawnedMode);
