/** @type {import('jest').Config} `npm run test:image`: the image smoke test alone (a container engine needed). */
const base = require('./jest.config.js');
module.exports = { ...base, roots: ['<rootDir>/test/image'], testPathIgnorePatterns: [], maxWorkers: 1, testTimeout: 600000 };
