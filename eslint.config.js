// Lint rules: the typescript-eslint recommended set, with the few project conventions below.
import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['node_modules/', 'native/build/', '.chorus/', 'dist/', 'bench/results/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      // `_`-prefixed names mark parameters an interface requires but this implementation does not use.
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      // A timer handle declared before the closure that clears it and assigned after is not a const.
      // prettier wraps code at 120; this catches what it cannot wrap (strings, comments, template literals).
      'max-len': ['error', { code: 120, ignoreUrls: true }],
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
    },
  },
  {
    files: ['src/server/playground/**/*.js'],
    languageOptions: { globals: globals.browser },
  },
  {
    files: ['bin/**/*.js'],
    languageOptions: { globals: globals.node },
  },
);
