import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // End-to-end tests spawn processes and real servers; two cores are shared.
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
  },
});
