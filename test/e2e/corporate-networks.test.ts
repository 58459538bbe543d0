// End-to-end, corporate networks and secrets: proxies, private CAs, redirects, and a token that never leaks.

import { spawnedMode } from '../helpers/bridge-mode.js';
import { defineNetworkSuite } from '../suites/network.js';

defineNetworkSuite(spawnedMode);
