import { loadStackEnv } from './stack-env';

loadStackEnv();
process.env.LOG_LEVEL ??= 'warn';
