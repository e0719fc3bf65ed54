"""What captum insights' POST /attribute does: the label index arrives from JSON as an int.

No test of captum's own reaches `_calculate_attribution_from_cache` (app.py), where TCV205 fixes
`torch.tensor(target)`; this runs it the way server.py and widget.py call it.
"""

import torch
from captum.insights import AttributionVisualizer, Batch
from captum.insights.attr_vis.app import FilterConfig
from captum.insights.attr_vis.features import GeneralFeature

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(4, 3))
batch = Batch(inputs=(torch.rand(2, 4),), labels=torch.tensor([0, 2]))
visualizer = AttributionVisualizer(
    models=[model],
    classes=["a", "b", "c"],
    features=[GeneralFeature("x", categories=["f0", "f1", "f2", "f3"])],
    dataset=iter([batch]),
    score_func=None,
)
visualizer._config = FilterConfig(attribution_arguments={"n_steps": 2})
visualizer.visualize()
request_body = {"inputIndex": 0, "modelIndex": 0, "labelIndex": 1}
output = visualizer._calculate_attribution_from_cache(request_body["inputIndex"], request_body["modelIndex"], request_body["labelIndex"])
print([round(float(f.contribution), 6) for f in output.feature_outputs])
