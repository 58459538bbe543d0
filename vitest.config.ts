import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // End-to-end tests spawn processes and real servers; two cores are shared.
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    coverage: {
      provider: 'v8',
      // Measured in-process: the end-to-end suite runs the bundle in child processes, which v8 coverage here does not see.
      include: ['src/**/*.ts'],
      // The demo server is a test peer shipped for `--demo`, not the bridge; declaration files hold no code.
      exclude: ['src/demo-server.ts', 'src/**/*.d.ts'],
      reporter: ['text', 'json-summary'],
    },
  },
});
