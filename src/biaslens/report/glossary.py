"""The words of every report's tables: human column names for machine ones (``ci_low`` ->
"95% CI, low") and the glossary, one or two plain sentences per metric with its ideal value.

One source for every page: :class:`~biaslens.report.html.Table` shows :func:`human_name` of each
column (the CSV/Parquet files keep the machine names), and each page ends with
:func:`glossary_for` the names it shows. A name a page shows is either a metric with a
:data:`GLOSSARY` entry (directly or through :data:`PATTERNS`) or a label/count in
:data:`NOT_METRICS`; the browser test checks that every report's names are one or the other."""

from __future__ import annotations

import re
from dataclasses import dataclass

#: machine column name -> header a reader sees (the same in every report)
COLUMN_NAMES: dict[str, str] = {
    # intervals and tests
    "ci_low": "95% CI, low", "ci_high": "95% CI, high", "ci_method": "interval method",
    "p_value": "p", "p_holm": "p (Holm)", "p_bh": "p (BH)", "p_greater": "p (one-sided)", "se": "SE", "df": "df",
    "few_descriptors": "too few descriptors", "n_significant": "significant pairs",
    # holistic-likelihood
    "likelihood_bias": "Likelihood Bias", "likelihood_bias_bh": "Likelihood Bias (BH)",
    "likelihood_bias_holm": "Likelihood Bias (Holm)", "rank_biserial": "rank-biserial r",
    "abs_rank_biserial": "|rank-biserial r|", "abs_log_median_ratio": "|log median ratio|",
    "descriptor_0": "descriptor A", "descriptor_1": "descriptor B", "median_0": "median A", "median_1": "median B",
    "n_0": "sentences A", "n_1": "sentences B", "love_hate_diff": "love - hate", "n_eligible": "eligible descriptors",
    "median_ppl": "median perplexity",
    # holistic-generation
    "fgb_x1000": "FGB x1000", "pgb_x1000": "PGB x1000", "scgb_x1000": "SCGB x1000", "top1_share": "top-1 share",
    "mean_probability": "mean probability", "classifier_precision": "classifier precision",
    "classifier_recall": "classifier recall", "fgb_before": "FGB before", "fgb_after": "FGB after",
    "noise_ratio": "FGB / permuted FGB", "percent_offensive": "responses offensive, %",
    "parroting_before_%": "parroting before, %", "parroting_after_%": "parroting after, %",
    # holistic-offensiveness
    "mean_offensiveness": "mean offensiveness", "std_offensiveness": "SD of offensiveness",
    "mean_unmasked": "mean offensiveness, unmasked", "std_unmasked": "SD of offensiveness, unmasked",
    "neutral_sentence": "neutral sentence",
    # redditbias
    "bias_type": "bias type", "cohens_d": "Cohen's d", "median_diff": "median difference",
    "diff_skew": "skew of differences", "skew_warning": "skew warning", "welch_t": "Welch t", "welch_p": "Welch p",
    "mean_minoritized": "mean perplexity, minoritized", "mean_dominant": "mean perplexity, dominant",
    "ppl_minoritized": "perplexity, minoritized", "ppl_dominant": "perplexity, dominant", "n_outliers": "outliers",
    # community
    "demographic_a": "demographic a", "demographic_b": "demographic b", "mean_a": "mean a", "mean_b": "mean b",
    "negative_share": "negative share", "toxicity_masked_mean": "toxicity (masked), mean",
    "toxicity_unmasked_mean": "toxicity (unmasked), mean", "n_generations": "replies",
    # fairpair
    "F_median": "F (median)", "detectable_F": "detectable F", "mean_cross": "mean cross-set dissimilarity",
    "mean_within": "mean within-set dissimilarity", "n_cross": "cross-set pairs", "n_within": "within-set pairs",
    "n_prompts_both": "prompts in both sets", "prompt_level_t": "prompt-level t",
    "prompt_level_p_greater": "prompt-level p (one-sided)", "n_undefined_F": "prompts with undefined F",
    "freq_a": "share in A", "freq_b": "share in B", "count_a": "count in A", "count_b": "count in B",
    "diff": "difference in share", "pair_id": "pair", "kept_share": "kept share", "n_A": "samples A",
    "n_B": "samples B", "kept_B": "kept, B", "ambiguous_share_A": "ambiguous share, A",
    "ambiguous_share_B": "ambiguous share, B",
    # crows-pairs, winogender, winobias (paired preference)
    "n_units": "units", "sign_p": "sign test p", "mean_diff": "mean difference", "ll_diff": "score difference",
    "stereo_antistereo": "direction", "score_more": "score, sent_more", "score_less": "score, sent_less",
    "sent_more": "sent_more", "sent_less": "sent_less", "bls_pct_female": "women, % (BLS)", "d_mf": "male - female",
    "d_mn": "male - neutral", "d_fn": "female - neutral", "d_pro_anti": "pro - anti",
    # counts everywhere
    "n_descriptors": "descriptors", "n_pairs": "pairs", "n_prompts": "prompts", "n_responses": "responses",
    "n_missing": "missing", "n_used": "used", "n_keywords": "keywords", "n_templates": "templates", "n": "n",
}


def human_name(name: object) -> str:
    """The header a reader sees for a column: :data:`COLUMN_NAMES`, else the name with its
    underscores as spaces ("dropped_B_ambiguous_reference" -> "dropped, B: ambiguous reference",
    "n_foo" -> "foo")."""
    s = str(name)
    if s in COLUMN_NAMES:
        return COLUMN_NAMES[s]
    s = re.sub(r"^n_(?=[a-z])", "", s)
    s = re.sub(r"(?<=[a-z])_([AB])_", r", \1: ", s)  # the FairPair sets inside a name
    s = re.sub(r"(?<=[a-z])_([AB])$", r", \1", s)
    # paper symbols (V_A, S_mean) keep their underscore: only lower-case words are joined by spaces
    return re.sub(r"(?<=[a-z0-9])_(?=[a-z0-9])", " ", s)


@dataclass(frozen=True)
class Entry:
    name: str
    text: str
    ideal: str


_CI = ("95% confidence interval: the range of values compatible with the data; a wider interval means less "
       "certainty. When a difference's interval excludes 0, the difference is statistically significant at 5%.")

#: metric (as shown) -> (what it is, in one or two plain sentences; its ideal value)
GLOSSARY: dict[str, tuple[str, str]] = {
    # shared statistics
    "95% CI": (_CI, "narrow; for a bias or a difference, containing 0"),
    "interval (level)": ("The range of values compatible with the data, at the coverage printed beside it: 95% "
                         "for most numbers, 90% for Full Gen Bias' permutation interval, higher where it is corrected "
                         "for several tests (Holm's or Bonferroni's step); a wider interval means less certainty.",
                         "narrow; for a bias or a difference, containing 0"),
    "simultaneous 95% CI": ("An interval made wider so that all the intervals of the table hold together 95% of "
                            "the time; valid for the largest gap picked out of many.", "containing 0"),
    "p": ("p-value: how often a difference at least this large would appear by chance if there were none. Small "
          "(below 0.05) means the difference is unlikely to be chance.", "large (no evidence of bias)"),
    "p (Holm)": ("The p-value corrected (Holm) for the number of tests in the table, so that testing many pairs does "
                 "not produce false alarms by chance.", "large (no evidence of bias)"),
    "p (BH)": ("The p-value corrected (Benjamini-Hochberg) for the number of tests, controlling the share of false "
               "alarms among the significant results.", "large (no evidence of bias)"),
    "p (one-sided)": ("p-value of the one-sided test that the difference goes in the direction of bias only.",
                      "large (no evidence of bias)"),
    "permutation p-value": ("Share of shuffles of the descriptor labels that gave a bias at least as large as the "
                            "observed one. Small means the observed bias is beyond sampling noise.",
                            "large (bias within noise)"),
    "t": ("t statistic: the difference between the two sides divided by its standard error; its sign gives the "
          "direction. |t| above about 2 is significant at 5%.", "0"),
    "df": ("Degrees of freedom of the t-test: larger means the p-value rests on more independent evidence.",
           "large"),
    "SE": ("Standard error: the uncertainty of the mean difference.", "small"),
    "significant": ("Whether the test's p-value is below alpha (0.05): yes means a difference beyond chance.",
                    "no (not significant)"),
    "stars": ("Significance of the test: * p < .05, ** p < .01, *** p < .001; none means not significant.",
              "none"),
    # holistic-likelihood
    "Likelihood Bias": ("Share of descriptor pairs in an axis whose sentences the model finds significantly more "
                        "or less likely (Mann-Whitney U test on perplexities). 0 means the model treats the "
                        "descriptors alike.", "0"),
    "Likelihood Bias (BH)": ("Likelihood Bias after the Benjamini-Hochberg correction for the number of pairs "
                             "tested: fewer pairs count as different by chance.", "0"),
    "Likelihood Bias (Holm)": ("Likelihood Bias after the stricter Holm correction for the number of pairs "
                               "tested.", "0"),
    "rank-biserial r": ("Effect size of a descriptor pair: the probability that a sentence of descriptor A is less "
                        "likely than one of descriptor B, minus the reverse (from -1 to 1).", "0"),
    "|log median ratio|": ("How far apart the two descriptors' median perplexities are, as the absolute log of "
                           "their ratio.", "0"),
    "median perplexity": ("The middle perplexity of the sentences (perplexity: how surprised the model is by a "
                          "sentence; lower is more likely).", "none: compare descriptors"),
    "significant pairs": ("Number of descriptor pairs whose perplexities differ significantly (p < alpha).", "0"),
    "love - hate": ("Share of a descriptor's 'I love ...' sentences below the template's median perplexity minus "
                    "that share for 'I hate ...'. Negative: the model finds hating the group relatively likelier.",
                    "0"),
    "template share": ("Share of a descriptor's sentences in this template that are more likely (lower "
                       "perplexity) than the template's median sentence.", "0.5"),
    # holistic-generation
    "Full Gen Bias x1000": ("How much the style of the model's responses (sympathetic, curious, hateful ...) "
                            "varies with the descriptor in the prompt: the variance across descriptors of the mean "
                            "style, summed over styles, x1000.", "0"),
    "PGB x1000": ("Partial Gen Bias: the part of Full Gen Bias that comes from one cluster of styles, x1000.", "0"),
    "SCGB x1000": ("Summed-Cluster Gen Bias: the variance across descriptors of the cluster's total probability, "
                   "x1000.", "0"),
    "FGB with permuted labels (mean)": ("The noise floor: the Full Gen Bias of the same responses with the "
                                        "descriptor labels shuffled, i.e. what sampling noise alone gives.",
                                        "none: the yardstick"),
    "FGB / permuted FGB": ("How many times above the noise floor the observed Full Gen Bias is.", "1 or less"),
    "top-1 share": ("Share of responses whose most probable style is in this cluster.", "none: it describes, it does not measure bias"),
    "mean probability": ("Mean probability the style classifier gives the style or cluster over the responses.",
                         "none: it describes, it does not measure bias"),
    "classifier precision": ("Of the test replies the style classifier put in this cluster, the share that the "
                             "language-model annotators did too.", "1"),
    "classifier recall": ("Of the test replies the language-model annotators put in this cluster, the share the "
                          "style classifier found.", "1"),
    "change": ("The after-minus-before difference of the bias measure.", "negative (less bias), 0 at worst"),
    "style variance x1000": ("The variance across descriptors of one style's mean probability, x1000: that "
                             "style's term in Full Gen Bias.", "0"),
    "key phrase share, %": ("Percentage of responses containing one of the cluster's key phrases (e.g. \"I'm sorry "
                            "to hear that\" for Sympathy).", "equal across descriptors and axes"),
    "parroting, %": ("Responses that repeat the prompt, in percent (paper C.2.1).", "0"),
    # offensiveness
    "% offensive": ("Percentage of texts the offensiveness classifier rates offensive (probability at least "
                    "0.5).", "0"),
    "mean offensiveness": ("Mean probability of being offensive the classifier gives the sentences.", "0"),
    "SD of offensiveness": ("Standard deviation across descriptors of their mean offensiveness: how much "
                            "offensiveness depends on the descriptor.", "0"),
    "bare": ("The classifier's offensiveness probability for the descriptor on its own.", "0"),
    "neutral": ("The classifier's offensiveness probability for the descriptor in a neutral sentence.", "0"),
    "max": ("The larger of the bare and neutral-sentence offensiveness probabilities.", "0"),
    "% flagged": ("Percentage of descriptors the classifier flags (probability at least 0.5) in themselves, with "
                  "no offensive content around them.", "0"),
    # scorer cards
    "skill": ("How well the classifier agrees with the labels of language-model annotators (not people) on "
              "held-out real replies, chance-corrected (balanced accuracy or AUROC) with its interval.",
              "1 (0.5 or 1/K is chance)"),
    "precision (95% Wilson)": ("Of the replies the classifier gave this label, the share the language-model "
                               "annotators gave it too, with a 95% interval.", "1"),
    "recall (95% Wilson)": ("Of the replies the language-model annotators gave this label, the share the classifier "
                            "found, with a 95% interval.", "1"),
    "false-positive rate (95% Wilson)": ("Of a group's replies the language-model annotators did not label positive "
                                         "(toxic, offensive or negative), the share the classifier flagged, with a 95% "
                                         "interval [flagged/replies]. Unequal rates across groups make a gap of the "
                                         "classifier's own.", "0, and equal across groups"),
    "false-negative rate (95% Wilson)": ("Of a group's replies the language-model annotators labelled positive, the "
                                         "share the classifier missed, with a 95% interval [missed/replies].",
                                         "0, and equal across groups"),
    "mean score": ("The classifier's mean score over a group's labelled replies.", "none"),
    "commonest wrong cluster given (95% Wilson)": (
        "Of a group's replies the language-model annotators put in another style cluster, the share the style "
        "classifier gave its commonest wrong cluster (named in the column), with a 95% interval [given/replies].",
        "0, and equal across groups"),
    "largest shift in a cluster's share (judge - labelled)": (
        "The style cluster whose share of a group's replies the classifier moves most from the share the "
        "language-model annotators gave it: what the classifier itself adds to that group's style distribution.",
        "0"),
    "judge": ("The classifier the number rests on; \"judge without measured skill\" when its scorer card showed no "
              "skill on labelled real model output: the number is then the judge's output, not evidence of bias.",
              "a judge with measured skill"),
    "identity gap": ("The largest difference between two identity terms' mean scores in otherwise identical "
                     "neutral sentences: the classifier's reaction to the identity word itself.", "0"),
    # redditbias
    "Cohen's d": ("Effect size of the paired difference in perplexity (mean difference / its standard "
                  "deviation); negative: the stereotype is likelier for the minoritized group. |d| of 0.2 is "
                  "small, 0.8 large.", "0"),
    "median difference": ("Median of the paired perplexity differences (minoritized minus dominant); robust to "
                          "skewed differences.", "0"),
    "skew of differences": ("Skewness of the paired differences; above 2 in size the t-test is unreliable and "
                            "the median difference is the better reading.", "0"),
    "skew warning": ("Marks a bias type whose differences are heavily skewed (|skew| > 2).", "no warning"),
    "sign effect": ("Share of phrase pairs in which the dominant group's phrase is likelier minus the share in which "
                    "the minoritized group's is (untied pairs); negative: the stereotype is likelier for the "
                    "minoritized group. -0.5: three pairs in four lean that way. Its exact test holds at any skew.",
                    "0"),
    "largest |sign effect|": ("The largest |sign effect| over the bias types, with an interval that holds for the "
                              "largest whichever type holds it; it excludes 0 exactly when the verdict finds bias.",
                              "0"),
    "detectable sign effect": ("The smallest sign effect in one bias type that the test detects with 80% power at "
                               "this size: a larger value means the run could miss a real bias.", "close to 0"),
    "bias score CI": ("The bias score's interval over templates: 95% over all categories; per category at the "
                      "level Holm's correction over the categories uses there (the level column beside), so it "
                      "excludes 0 exactly when the category is called biased.", "containing 0"),
    "CI at Holm's level": ("The sign effect's interval at the level Holm's correction over the bias types uses for "
                           "this type: it excludes 0 exactly when the type is called significant.", "containing 0"),
    "gap CI at Holm's level": ("BOLD: the gap's interval at the level Holm's correction over the model's pairs uses "
                               "for this pair: it excludes 0 exactly when the pair differs after Holm.", "containing 0"),
    "significant (Holm)": ("Whether the exact sign test finds bias in this type after Holm's correction over the "
                           "bias types (what the verdict says).", "no"),
    "Welch t": ("t statistic of Welch's test, which ignores the pairing of phrases (a secondary check).", "0"),
    "Welch p": ("p-value of Welch's test, which ignores the pairing of phrases.", "large (no evidence of bias)"),
    "perplexity": ("How surprised the model is by a text: lower means the model finds it more likely.",
                   "for bias: equal on both sides; for the LM check, low"),
    "gap": ("Difference between two groups' scores (first minus second).", "0"),
    # community
    "S_mean": ("Mean VADER sentiment of the replies about a demographic (from -1, negative, to 1, positive).",
               "equal across demographics"),
    "T_mean": ("Mean toxicity probability of the replies about a demographic.", "0, and equal across "
                                                                                "demographics"),
    "sentiment": ("VADER compound sentiment of a reply, from -1 (negative) to 1 (positive).",
                  "equal across demographics"),
    "toxicity": ("The toxicity classifier's probability that a reply is toxic.", "0"),
    "mean": ("Mean score (sentiment or toxicity) over the prompts.", "equal across groups"),
    "vs rest": ("Difference between this keyword or form's mean and the mean of the others.", "0"),
    "negative share": ("Share of replies with negative sentiment (VADER compound at most -0.05).", "equal across "
                                                                                                 "demographics"),
    "largest gap": ("The largest difference in sentiment or toxicity between two demographics of one "
                    "dimension, with its interval.", "0"),
    # fairpair
    "B": ("Bias: mean dissimilarity between continuations of the original and the perturbed prompt (x100 in the "
          "first table).", "as small as V_A and V_B"),
    "V_A": ("Sampling variability of set A: mean dissimilarity between two continuations of the same prompt.",
            "none: the yardstick for B"),
    "V_B": ("Sampling variability of set B: mean dissimilarity between two continuations of the same prompt.",
            "none: the yardstick for B"),
    "F": ("FairPair score B^2 / (V_A V_B): how large the difference between the two sets is compared with the "
          "model's own sampling variability. Near 1: no more than noise.", "1"),
    "detectable F": ("The smallest F the test would detect with about 80% power at this size: a larger value "
                     "means the run could miss a real difference.", "close to 1"),
    "mean cross-set dissimilarity": ("Mean dissimilarity between a continuation of set A and one of set B.",
                                     "equal to the within-set mean"),
    "mean within-set dissimilarity": ("Mean dissimilarity between two continuations of the same set.",
                                      "none: the yardstick"),
    "kept share": ("Share of perturbed continuations kept by the perturbation filters.", "1"),
    "ambiguous share": ("Share of continuations left out because a pronoun may refer to another person.", "0"),
    "difference in share": ("Share of continuations in A containing the n-gram minus the share in B.", "0"),
    "share in A": ("Share of the continuations in set A that contain the n-gram.", "equal to the share in B"),
    "share in B": ("Share of the continuations in set B that contain the n-gram.", "equal to the share in A"),
    "downstream score": ("The model's score on the user's dialog task (F1 for dialog state tracking; BLEU, NIST "
                         "or METEOR for response generation): debiasing should leave it about unchanged.",
                         "unchanged by debiasing (higher is better)"),
    # bbq
    "S_AMB": ("BBQ bias score in ambiguous contexts, x100: (1 - accuracy there) x (2 x the share of non-UNKNOWN "
              "answers that follow the stereotype - 1). From -100 to 100; 0: no bias (or always UNKNOWN).", "0"),
    "S_DIS": ("BBQ bias score in disambiguated contexts, x100: 2 x the share of non-UNKNOWN answers that follow the "
              "stereotype - 1. From -100 (always against the stereotype) to 100 (always with it).", "0"),
    "BBQ accuracy": ("Share of BBQ questions answered correctly, in %: UNKNOWN in ambiguous contexts, the person the "
                     "context names in disambiguated ones.", "100"),
    # bold
    "positive, %": ("Share of continuations VADER rates positive at BOLD's threshold (compound >= 0.5), in %.",
                    "equal across the groups of a domain"),
    "negative, %": ("Share of continuations VADER rates negative at BOLD's threshold (compound <= -0.5), in %.",
                    "equal across the groups of a domain"),
    "toxic, %": ("Share of continuations the toxicity judge rates toxic (probability >= 0.5), in %.", "0"),
    "gender-leaning, %": ("Share of continuations with more male (or female) words than female (male) ones: BOLD's "
                          "unigram gender polarity.", "equal across groups, unless the prompt is about one gender"),
    "noise floor": ("The largest gap between groups when the pages' group labels are shuffled within each domain: "
                    "what picking the largest of many gaps gives with no group difference at all.",
                    "none: the yardstick for the largest gap"),
    # crows-pairs, winogender, winobias (paired preference)
    "share": ("Percent of items (sentence pairs) whose first form the model scores higher: CrowS-Pairs the more "
              "stereotyping sentence, WinoBias the pro-stereotypical one, Winogender the male one (or the one its "
              "row names). A tie counts as not preferring it.", "50"),
    "CrowS-Pairs metric score": ("The CrowS-Pairs authors' metric: percent of pairs whose more stereotyping "
                                 "sentence (sent_more) scores higher, scores rounded to 3 decimals, ties in the "
                                 "denominator.", "50"),
    "stereotype score": ("CrowS-Pairs: the metric score over the stereo pairs only.", "50"),
    "anti-stereotype score": ("CrowS-Pairs: the metric score over the antistereo pairs only (sent_more is the "
                              "sentence about the advantaged group).", "50"),
    "mean difference": ("Mean of score(first form) - score(second form) over the items, in nats (log-likelihood; "
                        "pseudo-log-likelihood for masked models). Its sign says which form the model favours.", "0"),
    "score difference": ("score(first form) - score(second form) of one item, nats.", "0"),
    "sentence score": ("The log-likelihood the model gives the sentence (nats; higher is likelier), or its "
                       "pseudo-log-likelihood of the tokens both forms share (masked models).",
                       "none: compare the two forms"),
    "neutral, %": ("CrowS-Pairs: percent of pairs whose two scores tie after rounding to 3 decimals.",
                   "none: ties count against the metric score"),
    "level": ("Coverage of the interval in its row: 0.95, or higher where it is corrected for several tests "
              "(Holm's step), so the interval excludes the ideal exactly when the corrected test rejects.",
              "none: a setting"),
    "detectable": ("The smallest effect, in the row's units, that this many items detect with 80% power; a test "
                   "that does not reject and whose detectable effect is large says 'cannot tell'.",
                   "small: the design has power"),
    "women, % (BLS)": ("The occupation's share of women in the U.S. (Bureau of Labor Statistics, 2015), as "
                       "Winogender's occupations-stats.tsv gives it.", "none: a statistic of the occupation"),
    "correlation": ("Pearson correlation, across occupations, of the model's preference for the female form "
                    "(female - male log-likelihood) with the occupation's share of women (BLS): positive means "
                    "the model's preference tracks the employment statistics, as in Rudinger et al. (2018) Figure 4.",
                    "0"),
    "pro-anti gap": ("WinoBias: percent of twins whose pro-stereotypical form scores higher minus percent whose "
                     "anti-stereotypical form does, in percentage points.", "0"),
    # the card and comparisons
    "value": ("The method's headline number (its metric is named in the row).", "given in the row's direction"),
}

#: shown name (regular expression, case-insensitive, whole name) -> GLOSSARY key; the first match wins
PATTERNS: list[tuple[str, str]] = [
    (r"'.+' given to replies labelled otherwise \(95% Wilson\)", "commonest wrong cluster given (95% Wilson)"),
    (r"S_AMB( \((95% )?CI\)|, (lm-eval|HELM))?", "S_AMB"), (r"S_DIS( \((95% )?CI\)|, (lm-eval|HELM))?", "S_DIS"),
    (r"simultaneous 95% CI|its simultaneous .*", "simultaneous 95% CI"),
    (r"S_(AMB|DIS) CI", "bias score CI"), (r"S_(AMB|DIS) CI level", "level"),
    (r".*95% (CI|interval).*|95% CI, (low|high)|ci (low|high)|interval|FGB permutation interval.*|"
     r"FGB 95% descriptor-population interval", "95% CI"),
    (r"(its |prompt-level |sign |S_(AMB|DIS) )?p \(Holm\)|p holm|p_holm|welch p \(holm\)|holm p", "p (Holm)"),
    (r"p value|p_value|p-value|(log-ratio|sign test|median sign test) p", "p"),
    (r"(prompt-level )?p \(one-sided\)|p greater", "p (one-sided)"),
    (r"(prompt-level |lmb_)?t(\..+)?|lmb t", "t"),
    (r"likelihood[ _]bias( \(uncorrected\))?", "Likelihood Bias"),
    (r"likelihood[ _]bias[ _](bh|\(Benjamini-Hochberg\))", "Likelihood Bias (BH)"),
    (r"likelihood[ _]bias[ _]holm", "Likelihood Bias (Holm)"),
    (r"(median|median perplexity) [AB]|median line perplexity", "median perplexity"),
    (r"full[ _]gen[ _]bias[ _]x1000|FGB x1000|fgb (before|after)|FGB (before|after)|.*Full Gen Bias.*|FGB weighted by axis size", "Full Gen Bias x1000"),
    (r"detectable FGB.*", "detectable"),
    (r"pgb x1000 .*", "PGB x1000"), (r"scgb x1000 .*", "SCGB x1000"),
    (r"probability|mean[ _]probability|mean (before|after)", "mean probability"),
    (r"parroting (before|after), %", "parroting, %"),
    (r"(responses|sentences) offensive.*%|percent offensive.*", "% offensive"),
    (r"mean offensiveness.*", "mean offensiveness"), (r"SD of offensiveness.*|std .*", "SD of offensiveness"),
    (r"(bare descriptors|neutral sentences) flagged, %", "% flagged"),
    (r"skill.*|.* classifier validity|.* scorer validity|classifier validity", "skill"),
    (r"identity gap.*", "identity gap"),
    (r"cohens?[ _]d(\..+)?|d", "Cohen's d"),
    (r"gap(, (base|model|templates balanced))?|mean gap (before|after)", "gap"),
    (r"largest_(sentiment|toxicity)_gap(\..+)?", "largest gap"),
    (r"toxicity( \((masked|unmasked)\))?,? mean", "toxicity"),
    (r"mean (perplexity, )?(minoritized|dominant)|perplexity, (minoritized|dominant)", "perplexity"),
    (r"vs rest of demographic|vs other forms", "vs rest"), (r"mean [ab]", "mean"),
    (r".+: B", "B"), (r".+: F|F(\..+)?|F \(median\)", "F"),
    (r"(.+: )?V_A( \(.+\))?", "V_A"), (r"(.+: )?V_B( \(.+\))?", "V_B"),
    (r"ambiguous share, [AB]", "ambiguous share"),
    (r"I( |').*", "template share"),
    (r"(mean|median|log-ratio) change", "change"), (r"variance x1000 (before|after|change)", "style variance x1000"),
    (r"(Sympathy|Confusion)( .+)?|percent", "key phrase share, %"),
    (r"sign[ _]effect(\..+| before| after| change)?", "sign effect"),
    (r"largest[ _]abs[ _]sign[ _]effect", "largest |sign effect|"),
    (r"detectable sign effect.*", "detectable sign effect"),
    (r"s_amb(\..+)?", "S_AMB"), (r"s_dis(\..+)?", "S_DIS"),  # after the intervals: "s_amb.age (95% CI)" is one
    (r"(male|female)-leaning, %", "gender-leaning, %"), (r"sentiment, mean", "sentiment"),
    (r"accuracy, (ambiguous|disambiguated)|accuracy HELM scales by|accuracy_(ambiguous|disambiguated)", "BBQ accuracy"),
    (r"f1|precision|recall|bleu.*|nist.*|meteor|.*accuracy.*|.*f1", "downstream score"),
    (r"metric[ _]score(\..+)?", "CrowS-Pairs metric score"), (r"stereo_score", "stereotype score"),
    (r"antistereo_score", "anti-stereotype score"), (r"mean_ll_diff(\..+)?|mean_diff_[a-z_]+|mean diff CI", "mean difference"),
    (r"share(_[a-z_]+)?(\..+)?|share CI|change, points", "share"),
    (r"score, .+", "sentence score"), (r"correlation(_[a-z]+)?", "correlation"),
    (r"pro_anti_gap(\..+)?", "pro-anti gap"), (r"(male|female|pro) - (female|neutral|anti)", "score difference"),
]

#: names a page shows that are labels, counts, settings or text, not metrics (no glossary entry)
NOT_METRICS: set[str] = {
    "more stereotyping sentence", "less stereotyping sentence",
    # the card's budget table: its budget, each method's settings, the machine and the time
    "budget", "holistic-likelihood", "redditbias", "holistic-generation", "holistic-offensiveness", "fairpair",
    "community", "machine", "time",
    "", "model", "models", "axis", "descriptor", "descriptor A", "descriptor B", "descriptors", "template", "templates",
    "note", "list note", "low ppl descriptors", "high ppl descriptors", "too few descriptors", "interval method",
    "interval over", "pairs", "sentences A", "sentences B", "sentences A / B", "eligible descriptors", "descriptor pairs tested",
    "sentences scored", "sentences excluded (no finite value)", "scoring", "responses", "prompts", "keywords",
    "style", "styles", "cluster", "class", "labelled", "labelled positive", "predicted", "correct", "frequency", "prompt", "response",
    "noise-floor strata", "style classifier", "offensiveness classifier", "toxicity classifier", "classifier",
    "scores", "sentences", "descriptors audited", "flagged (bare or neutral)", "flagged", "range",
    "neutral sentence", "offensiveness", "alpha", "split", "file", "lines", "tokens", "bias type", "view",
    "source", "phrase", "counterfactual", "bias type / view", "outlier removal", "swapped / unswappable",
    "stray labels", "outliers", "missing", "used", "prompts in the paper", "replies scored", "replies",
    "gap test", "gap CI", "dimension", "demographic", "demographic a", "demographic b", "a - b", "keyword",
    "form", "CI over", "keywords a / b", "prompts a / b", "prompts missing", "dissimilarity", "dissimilarities",
    "status", "reason", "n", "samples A", "samples B", "kept", "kept, B", "name pair", "occupation", "pair",
    "prompt x", "A: p(g(x))", "B: g(p(x))", "ngram", "side", "count in A", "count in B", "cross-set pairs",
    "within-set pairs", "prompts in both sets", "prompts with undefined F", "k", "chat", "filter jaccard",
    "k folds", "max jaccard", "max new tokens", "occupations", "perturber", "samples", "seed", "temperature",
    "top p", "method", "verdict", "headline metric", "direction", "seconds", "metric", "n used", "n missing",
    "what it is", "role", "scorer", "warning", "kind", "chosen because", "scores in this report",
    "before", "after", "why", "against", "biggest decrease", "biggest increase", "suite", "what", "task", "n prompts", "n descriptors", "n responses",
    "n pairs", "n generations", "dropped prefix", "dropped jaccard", "dropped original mention",
    "dropped ambiguous reference", "dropped, B: ambiguous reference",
    # bbq
    "bbq", "category", "items", "rule", "answers", "context", "question", "answer", "unmappable answers",
    "items without a biased answer", "non-UNKNOWN answers", "left out", "items (templates)", "pages / prompts", "non-UNKNOWN answers, ambiguous", "non-UNKNOWN answers, disambiguated",
    "answering", "dataset", "selection", "test",
    # bold
    "bold", "domain", "group", "page", "pages", "pages a / b", "score", "decoding",
    "untied pairs", "minoritized likelier", "dominant likelier", "pairs that changed side",
    # crows-pairs, winogender, winobias
    "crows-pairs", "winogender", "winobias", "units", "ties", "ideal", "leans", "sent_more",
    "sent_less", "participant", "type", "schema", "referent",
    "gender", "item", "unit", "prefers", "twins", "minimal", "pro", "anti", "type.split", "id", "schemas",
}


def lookup(shown: str) -> str | None:
    """The glossary key of a name as shown, or None (a label, or a name without an entry)."""
    key = str(shown).strip()
    folded = {k.casefold(): k for k in GLOSSARY}
    if key.casefold() in folded:
        return folded[key.casefold()]
    for pattern, k in PATTERNS:
        if re.fullmatch(pattern, key, flags=re.IGNORECASE):
            return k
    return None


def glossary_for(names) -> list[Entry]:
    """The entries of the metrics among ``names`` (as shown on a page), in page order, once each."""
    keys = dict.fromkeys(k for k in map(lookup, names) if k is not None)
    return [Entry(k, *GLOSSARY[k]) for k in keys]
