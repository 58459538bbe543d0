#!/usr/bin/env node
// Checks the Node version in syntax any Node parses, then starts the CLI.
'use strict';

var required = [20, 18, 1];
var found = process.versions.node.split('.').map(Number);
var tooOld = found[0] < required[0] || (found[0] === required[0] && (found[1] < required[1] || (found[1] === required[1] && found[2] < required[2])));
if (tooOld) {
  process.stderr.write('fenbs-mcp needs Node.js ' + required.join('.') + ' or newer, but it was started with Node.js ' + process.versions.node + ' (' + process.execPath + '); install a current Node.js LTS or point your client at it.\n');
  process.exit(1);
}

// Node 22.1+ keeps the compiled bundle on disk between runs, so every start after the first
// skips most of the compile work; older Nodes have no such API and start as before.
import('node:module')
  .then(function (nodeModule) {
    if (typeof nodeModule.enableCompileCache === 'function') nodeModule.enableCompileCache();
    return import('../dist/cli.js');
  })
  .then(function (cli) {
    cli.run();
  });
