"""Community bias (Wald & Pfahler): community posts/comments for fine-tuning and the
placeholder-template prompts for the comparison."""

from biaslens.methods.community.dataset.cleaning import TextCleaner, clean_text
from biaslens.methods.community.dataset.prompts import (
    FORMS,
    PAPER_PROMPT_COUNT,
    Keyword,
    Template,
    build_prompts,
    fill_template,
    indefinite_article,
    load_keywords,
    load_templates,
)
from biaslens.methods.community.dataset.readers import (
    Columns,
    CommunityData,
    CommunityDataError,
    CommunityExample,
    read_community,
    read_table,
)

__all__ = ["FORMS", "PAPER_PROMPT_COUNT", "Columns", "CommunityData", "CommunityDataError", "CommunityExample",
           "Keyword", "Template", "TextCleaner", "build_prompts", "clean_text", "fill_template",
           "indefinite_article", "load_keywords", "load_templates", "read_community", "read_table"]
