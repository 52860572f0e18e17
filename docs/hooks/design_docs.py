"""MkDocs hook: the design docs (``docs/design/**``) are published with the site as they are in the repository
(Markdown source, not rendered), so a page links them by the same relative path on GitHub and on the site, and a
link to a design doc that does not exist fails ``mkdocs build --strict`` like any other broken link.

They are not rendered because they are written for the repository: they link benchmark results and code outside
``docs/``, which the site does not hold.
"""

from __future__ import annotations

from mkdocs.structure.files import File, Files


class SourceFile(File):
    """A Markdown file copied to the site as it is, like an image."""

    def is_documentation_page(self) -> bool:
        return False


def on_files(files: Files, config) -> Files:
    for page in [f for f in files if f.src_uri.startswith("design/") and f.is_documentation_page()]:
        files.remove(page)
        files.append(SourceFile(page.src_path, page.src_dir, page.dest_dir, page.use_directory_urls))
    return files
