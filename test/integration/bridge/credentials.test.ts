// In-process: --token-command and its renewal after a 401, and header secrets from the environment (src/ coverage).

import { inProcessMode } from '../../helpers/bridge-mode.js';
import { defineCredentialsSuite } from '../../suites/credentials.js';

defineCredentialsSuite(inProcessMode);
