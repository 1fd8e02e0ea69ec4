/**
 * Container image references as the Docker distribution grammar defines them, narrowed to
 * what the spec asks for: a registry host, a repository path, and a tag or a digest
 * ("host/path with tag or digest"). An implicit `latest` or Docker Hub default is refused:
 * a run says exactly what it runs and from where.
 */
const DOMAIN_COMPONENT = '(?:[A-Za-z0-9]|[A-Za-z0-9][A-Za-z0-9-]*[A-Za-z0-9])';
const HOST = `(?:${DOMAIN_COMPONENT}(?:\\.${DOMAIN_COMPONENT})*|\\[[0-9A-Fa-f:]+\\])(?::[0-9]{1,5})?`;
const PATH_COMPONENT = '[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*';
const TAG = '[\\w][\\w.-]{0,127}';
const DIGEST = '[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}';
/** The grammar as a regular expression (also the `pattern` of `image` in the OpenAPI document). */
export const IMAGE_REFERENCE_PATTERN = `^(${HOST})/(${PATH_COMPONENT}(?:/${PATH_COMPONENT})*)(?::(${TAG}))?(?:@(${DIGEST}))?$`;
const REFERENCE = new RegExp(IMAGE_REFERENCE_PATTERN);

/** Longest reference accepted; the repository name itself is capped at 255 by the grammar. */
export const IMAGE_REFERENCE_MAX_LENGTH = 512;
const NAME_MAX_LENGTH = 255;

export interface ImageReference {
  host: string;
  repository: string;
  tag: string | null;
  digest: string | null;
}

export function parseImageReference(reference: string): ImageReference | null {
  if (reference.length > IMAGE_REFERENCE_MAX_LENGTH) return null;
  const match = REFERENCE.exec(reference);
  if (!match) return null;
  const [, host, repository, tag, digest] = match as unknown as [
    string,
    string,
    string,
    string?,
    string?,
  ];
  // A first component without '.', ':' or "localhost" would be a Docker Hub namespace, not a host.
  if (!host.includes('.') && !host.includes(':') && host !== 'localhost') return null;
  if (`${host}/${repository}`.length > NAME_MAX_LENGTH) return null;
  if (!tag && !digest) return null;
  return { host, repository, tag: tag ?? null, digest: digest ?? null };
}

/**
 * An allowlist entry is an exact reference, or a prefix when it ends with "/" (a namespace),
 * ":" (any tag of a repository) or "@" (any digest of a repository).
 */
export function imageAllowed(reference: string, allowlist: string[] | null): boolean {
  if (allowlist === null) return true;
  return allowlist.some((entry) =>
    /[/:@]$/.test(entry) ? reference.startsWith(entry) : reference === entry,
  );
}
