// In-process, corporate networks and secrets: proxies, private CAs, redirects, and a token that never leaks.

import { inProcessMode } from '../../helpers/bridge-mode.js';
import { defineNetworkSuite } from '../../suites/network.js';

defineNetworkSuite(inProcessMode);
