import { useState } from 'preact/hooks';

/** Copies `text`; says so in its own label, since a toast would be one more live region to read. */
export function CopyButton({ text, label }: { text: string; label: string }) {
  const [copied, setCopied] = useState(false);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(text);
    } catch {
      // No clipboard API (an http origin other than localhost): select-and-copy by hand still works.
      const area = document.createElement('textarea');
      area.value = text;
      document.body.append(area);
      area.select();
      document.execCommand('copy');
      area.remove();
    }
    setCopied(true);
    setTimeout(() => setCopied(false), 2000);
  };
  return (
    <button type="button" class="small" onClick={copy} aria-label={copied ? `${label}: copied` : label}>
      {copied ? 'Copied' : 'Copy'}
    </button>
  );
}
