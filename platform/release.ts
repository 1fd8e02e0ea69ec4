import Joi from 'joi';

/** The `version` every probe answers (db/repository.ts reads it): what a user names a release by. */
export const releaseVersionField = () =>
  Joi.string().description(
    "the platform's version (package.json's), the release this process runs",
  );
