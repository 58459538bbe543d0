// Lint is the style guide: what it enforces is the house style.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import n from 'eslint-plugin-n';

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'coverage/**', '.bench-tmp/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      // The scripts outside tsconfig (no allowJs) number more than the default cap of 8.
      parserOptions: {
        projectService: {
          allowDefaultProject: ['*.js', 'bin/*.js', 'bench/*.js', 'bench/profile/*.js', 'scripts/*.js', 'test/helpers/*.mjs'],
          maximumDefaultProjectFileMatchCount_THIS_WILL_SLOW_DOWN_LINTING: 32,
        },
        tsconfigRootDir: import.meta.dirname,
      },
    },
    plugins: { n },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    files: ['src/**/*.ts'],
    rules: {
      'no-console': 'error',
      'n/no-process-exit': 'error',
    },
  },
  {
    files: ['src/cli/**/*.ts'],
    rules: { 'n/no-process-exit': 'off' },
  },
  {
    files: ['**/*.js', '**/*.mjs'],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: {
      globals: { process: 'readonly', console: 'readonly', URL: 'readonly', setTimeout: 'readonly', clearTimeout: 'readonly', Buffer: 'readonly' },
    },
  },
  {
    // bin/package.json makes the bin CommonJS (a CommonJS entry starts faster than an ES module one).
    files: ['bin/*.js'],
    languageOptions: { sourceType: 'commonjs', globals: { __dirname: 'readonly' } },
  },
  {
    files: ['test/**/*.ts'],
    rules: {
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/no-non-null-assertion': 'off',
      // Parsed wire messages are inspected freely in tests; src/ stays typed.
      '@typescript-eslint/no-explicit-any': 'off',
    },
  },
);
