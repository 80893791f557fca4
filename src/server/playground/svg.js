// SVG built node by node from server data (setAttribute / textContent only, never innerHTML): the stage graph and
// the waterfall draw with it.

const SVG_NS = 'http://www.w3.org/2000/svg';

/** A `tag` element with `attrs`, appended to `parent` when one is given. */
export function svg(tag, attrs, parent) {
  const el = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  if (parent) parent.append(el);
  return el;
}
