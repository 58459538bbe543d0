// End-to-end: --token-command and its renewal after a 401, and header secrets from the environment, through the built bin.

import { spawnedMode } from '../helpers/bridge-mode.js';
import { defineCredentialsSuite } from '../suites/credentials.js';

defineCredentialsSuite(spawnedMode);
