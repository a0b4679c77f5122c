export * from './effective-persona.js';
export * from './load-persona.js';
export * from './persona-policy.js';
export * from './persona.module.js';
export * from './persona-version.js';
export * from './attention-profile.js';
