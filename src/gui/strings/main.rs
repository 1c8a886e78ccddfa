//! The GUI's general texts, English and Simplified Chinese side by side: the menus, the controls
//! and their hovers, the verdict, the breakdown, the curves, the timeline, the Live tab's words and
//! the status line. Placeholders in braces (`{path}`, `{n}`, …) are replaced by the panels and kept
//! in both languages. [`tr`] answers in [`crate::gui::lang::current`].

use crate::estimate::Torch;
use crate::gui::lang::{self, Lang};

strings! {
    /// The GUI's texts.
    pub struct Strings, EN, ZH {
        app_title: "vramscope" / "vramscope",
        menu_file: "File" / "文件",
        menu_open: "Open config.json / .ron / .safetensors / .vstrace.json…" / "打开 config.json / .ron / .safetensors / .vstrace.json…",
        menu_export: "Export" / "导出",
        menu_export_window_png: "Window as PNG…" / "窗口导出为 PNG…",
        menu_export_chart_png: "Breakdown chart as PNG…" / "显存分解图导出为 PNG…",
        menu_export_slide: "Slide (PNG)…" / "幻灯片（PNG）…",
        menu_export_slide_tip: "The chart with a title, the scenario's caption, the verdict and a footer naming the command that prints its numbers: a 1920×1080 slide at 2× pixel density, light theme, in the interface's language"
            / "带标题、场景说明、结论和页脚（写明给出这些数字的命令）的显存分解图：1920×1080 的幻灯片，2 倍像素密度，浅色主题，使用界面语言",
        export_none: "Nothing to export: the scenario has no estimate (see the message above)."
            / "没有可导出的内容：当前场景没有估算结果（见上方信息）。",
        st_pinned: "Pinned the current scenario as {label}." / "已将当前场景固定为 {label}。",
        st_defaults: "Defaults restored (undo brings your scenario back)."
            / "已恢复默认设置（撤销可找回你的场景）。",
        st_not_shown: " (not shown in the app: {list})" / "（应用中未显示：{list}）",
        st_opened_scenario: "Opened scenario {path}{note}" / "已打开场景 {path}{note}",
        st_loaded: "Loaded {name} from {path}{notes}" / "已从 {path} 加载 {name}{notes}",
        st_exported: "Exported to {path}" / "已导出到 {path}",
        st_recorded: "Recorded {n} samples to {path}" / "已将 {n} 个采样记录到 {path}",
        st_opened_recording: "Opened {path} ({n} snapshots)" / "已打开 {path}（{n} 个快照）",
        st_writing: "Writing {path}…" / "正在写入 {path}…",
        st_writer_failed: "could not start the PNG writer: {e}" / "无法启动 PNG 写入线程：{e}",
        st_png_written: "PNG written to {path}" / "PNG 已写入 {path}",
        st_screenshot_written: "Screenshot written to {path}" / "截图已写入 {path}",
        generic_model: "Generic {b} B" / "通用 {b} B",
        generic_choice: "Generic (N billion)" / "通用（N 十亿参数）",
        export_cancelled: "Export cancelled: nothing was written." / "已取消导出：未写入任何文件。",
        menu_reset: "Reset to defaults" / "恢复默认设置",
        menu_quit: "Quit" / "退出",
        menu_view: "View" / "视图",
        menu_dark: "Dark theme" / "深色主题",
        menu_light: "Light theme" / "浅色主题",
        menu_presentation: "Presentation layout (projectors)" / "演示布局（投影仪）",
        controls_open: "Show the controls" / "显示控制面板",
        controls_fold: "Fold the controls into a strip (the chart gets their room)"
            / "将控制面板收起为窄条（图表占用其空间）",
        menu_learn: "Learn" / "学习",
        menu_learn_tip: "Eight lessons that walk a room through GPU memory with the live scenario (your own scenario comes back when you leave)"
            / "八节课，用实时场景带大家一步步理解显存（离开后恢复你自己的场景）",
        learn_back: "Back" / "上一课",
        learn_next: "Next" / "下一课",
        learn_leave: "Leave the lessons" / "退出课程",
        learn_leave_tip: "Back to your own scenario and tab (Esc)" / "回到你自己的场景和标签页（Esc）",
        learn_of: "Lesson {i} of {n}" / "第 {i} 课（共 {n} 课）",
        menu_language: "Language" / "语言",
        menu_help: "Help" / "帮助",
        help_text: "Move any control: every number is recomputed at once by the estimator core.\nHover a bar segment for its formula with your numbers. Click a curve to set that value.\nCtrl+Z / Ctrl+Shift+Z undo and redo. Drop a config.json, .ron or .safetensors file on the window to load it."
            / "调整任意控件：估算核心会立即重新计算所有数值。\n鼠标悬停在柱状图的分段上，可查看代入当前数值的公式。点击曲线可将参数设为该值。\nCtrl+Z / Ctrl+Shift+Z 撤销与重做。将 config.json、.ron 或 .safetensors 文件拖到窗口上即可加载。",
        section_model: "MODEL" / "模型",
        section_training: "WORKLOAD" / "工作负载",
        section_parallel: "PARALLEL" / "并行",
        section_hardware: "HARDWARE" / "硬件",
        model: "Model" / "模型",
        model_tip: "Which network: a preset, a generic size, or a file you opened. Sets the parameter count and the shapes of every tensor."
            / "选择网络：预设、通用规模，或已打开的文件。它决定参数量以及每个张量的形状。",
        generic_params: "Parameters (billions)" / "参数量（十亿）",
        generic_tip: "A Llama-shaped model of this size, for quick questions. Memory for weights, gradients and optimizer states grows linearly with it."
            / "该规模的 Llama 结构模型，用于快速估算。权重、梯度和优化器状态所占显存随参数量线性增长。",
        open_file: "Open file…" / "打开文件…",
        open_tip: "Load a HuggingFace config.json, a vramscope .ron preset or a .safetensors header (parameter count only)."
            / "加载 Hugging Face 的 config.json、vramscope 的 .ron 预设，或 .safetensors 文件头（仅读取参数量）。",
        path_field: "Path" / "路径",
        load: "Load" / "加载",
        mode: "Mode" / "模式",
        mode_train: "Train" / "训练",
        mode_infer: "Infer" / "推理",
        mode_tip: "Training keeps gradients, optimizer states and activations for backward; inference keeps the KV cache instead."
            / "训练需要为反向传播保留梯度、优化器状态和激活值；推理则改为保留 KV 缓存。",
        precision: "Precision" / "精度",
        precision_tip: "Bytes per weight, gradient, state and activation. Autocast (AMP) keeps fp32 master weights plus half copies for every matmul."
            / "每个权重、梯度、状态和激活值所占的字节数。自动混合精度（autocast，AMP）保留 fp32 主权重，并为每次矩阵乘法另存半精度副本。",
        optimizer: "Optimizer" / "优化器",
        optimizer_tip: "AdamW keeps two moments per parameter (and its foreach step a parameter-sized temporary); SGD keeps none; 8-bit AdamW one byte per moment; paged optimizers keep their states in unified memory, outside PyTorch's allocator."
            / "AdamW 为每个参数保留两个矩估计（其 foreach 更新还需要一个与参数同样大小的临时张量）；SGD 不保留；8-bit AdamW 每个矩估计占 1 字节；分页（paged）优化器把状态放在统一内存中，不经过 PyTorch 的分配器。",
        framework: "Framework" / "框架",
        framework_tip: "Sets the loss, adapter dtype and model code the way the framework defaults them: torchtune's chunked loss (8 chunks, fp32 per chunk), litgpt's own model code and its chunked cross-entropy on the fp32 logits Fabric returns, transformers' full fp32 logits."
            / "按各框架的默认方式设置损失、适配器的数据类型和模型代码：torchtune 的分块损失（8 块，每块 fp32）、litgpt 自己的模型代码以及在 Fabric 返回的 fp32 logits 上的分块交叉熵、transformers 的完整 fp32 logits。",
        framework_none: "transformers (default)" / "transformers（默认）",
        model_code: "Model code" / "模型代码",
        model_code_tip: "Whose implementation runs a Llama-like model: transformers' (torchtune keeps the same tensors), litgpt's (one fused qkv projection kept whole, LoRAQKVLinear's padded adapter output), or litgpt's before Oct 2023 (RMSNorm in the input dtype)."
            / "由谁的实现运行类 Llama 模型：transformers（torchtune 保留的张量相同）、litgpt（融合的 qkv 投影整体保留，LoRAQKVLinear 保留填充后的适配器输出），或 2023 年 10 月之前的 litgpt（RMSNorm 使用输入的数据类型）。",
        torch_release: "PyTorch release" / "PyTorch 版本",
        torch_release_tip: "Where autograd's rules changed between releases: before 2.2, mean() keeps its input for backward, so every RMSNorm also keeps its squared input (pytorch/pytorch#109876); before 1.11, softmax and log_softmax keep their input beside their output too, one more score-sized tensor per eager attention layer (pytorch/pytorch#65242); before 2.0 there is no SDPA, so attention runs eager."
            / "autograd 的保存规则随版本变化：2.2 之前，mean() 会为反向传播保留其输入，因此每个 RMSNorm 还会保留平方后的输入（pytorch/pytorch#109876）；1.11 之前，softmax 与 log_softmax 除输出外还保留输入，每个 eager 注意力层多保留一个分数大小的张量（pytorch/pytorch#65242）；2.0 之前没有 SDPA，注意力以 eager 方式运行。",
        /// The PyTorch classes, oldest first (as `Torch::ALL`).
        torch_classes[4]: [
            Torch::Before1_11.label(),
            Torch::Before2_0.label(),
            Torch::Before2_2.label(),
            Torch::Current.label(),
        ] / ["PyTorch 1.10 及更早", "PyTorch 1.11 - 1.13", "PyTorch 2.0 - 2.1", "PyTorch 2.2 及更新"],
        mixer_impl: "State-space mixers" / "状态空间混合器",
        mixer_impl_tip: "Which code runs the recurrent mixers (Mamba2, Mamba, gated DeltaNet, Kimi Delta Attention). With mamba_ssm, causal_conv1d or flash-linear-attention installed on a GPU, transformers calls their fused kernels: they keep the projections' outputs and a few statistics, and recompute the rest in backward. Without them (or on a CPU) transformers runs its own PyTorch ops, whose chunked scans keep several fp32 tensors per chunk: several times more."
            / "由哪段代码运行循环混合器（Mamba2、Mamba、门控 DeltaNet、Kimi Delta Attention）。在 GPU 上安装了 mamba_ssm、causal_conv1d 或 flash-linear-attention 时，transformers 调用它们的融合内核：只保留投影的输出和少量统计量，其余在反向时重算。未安装（或在 CPU 上）时，transformers 运行自己的 PyTorch 算子，其分块扫描每块保留多个 fp32 张量，显存要多数倍。",
        mixer_kernels: "fused kernels (mamba_ssm)" / "融合内核（mamba_ssm）",
        mixer_torch: "PyTorch ops (no mamba_ssm)" / "PyTorch 算子（无 mamba_ssm）",
        opt_in_bwd: "optimizer in backward" / "反向中执行优化器",
        opt_in_bwd_tip: "torchtune's optimizer_in_bwd: each parameter is stepped as soon as its gradient exists and the gradient is freed, so gradients never add up."
            / "torchtune 的 optimizer_in_bwd：每个参数的梯度一产生就立即更新该参数并释放梯度，因此各参数的梯度不会同时驻留。",
        grad_accum: "Grad accumulation" / "梯度累积",
        compiled_loss: "compiled loss" / "编译损失函数",
        compiled_loss_tip: "The loss under torch.compile (torchtune's compile: True): inductor's fused cross-entropy keeps the logits and one fp32 logsumexp per row instead of the fp32 log-softmax."
            / "在 torch.compile 下计算损失（torchtune 的 compile: True）：inductor 融合的交叉熵只保留 logits 和每行一个 fp32 logsumexp，而不保留 fp32 的 log-softmax。",
        grad_accum_tip: "Micro-batches per optimizer step. From the second one on every gradient is alive through forward and backward (each new gradient is summed into it), so the peak holds all gradients beside the activations."
            / "每个优化器更新步的微批次数。从第二个微批次起，每个梯度在前向和反向全程驻留（新梯度累加到其中），因此峰值时所有梯度与激活值同时存在。",
        batch: "Micro-batch" / "微批次",
        batch_tip: "Sequences per GPU per step. Activations (and the KV cache) grow linearly with it; weights and optimizer states do not."
            / "每个 GPU 每步的序列数。激活值（以及 KV 缓存）随其线性增长；权重和优化器状态不变。",
        seq: "Sequence length" / "序列长度",
        seq_tip: "Tokens per sequence. Activations grow linearly (quadratically for eager attention's scores)."
            / "每条序列的 token 数。激活值随其线性增长（eager 注意力的分数矩阵按平方增长）。",
        image_size: "Image size" / "图像尺寸",
        image_size_tip: "The input image's side in pixels (--image-size). The model cuts it into patches: each patch is one token, plus the class token, so activations grow with the image's area; positions are interpolated from the config's grid."
            / "输入图像的边长（像素，--image-size）。模型把图像切成图块：每个图块是一个 token，另加一个类别 token，所以激活值随图像面积增长；位置编码从配置的网格插值得到。",
        image_tokens: "{image}: {n} tokens per image" / "{image}：每张图像 {n} 个 token",
        image_feature_map: "{image}: last feature map {map}" / "{image}：最后的特征图 {map}",
        trace_dim_tip: "A dim of the traced model (--dim, or --image-size for height and width), traced at {values}. At other values every tensor's shape is fitted from the trace: the headline then says EXTRAPOLATED."
            / "追踪模型的一个维度（--dim；高和宽用 --image-size），已追踪的取值：{values}。其他取值下，每个张量的形状由追踪拟合得出，标题会注明“外推”。",
        trace_dim_fixed: "{name} = {value} (traced at this value only)" / "{name} = {value}（只追踪了这个取值）",
        trace_checkpoint: "Checkpoint the blocks ({blocks})" / "对块做梯度检查点（{blocks}）",
        trace_checkpoint_tip: "--checkpoint full: every call of these block classes runs as torch.utils.checkpoint (non-reentrant) runs it: the forward drops what the block's own ops saved and keeps its inputs; backward reruns the block's forward when it first needs one of those saves."
            / "--checkpoint full：这些块类的每次调用都按 torch.utils.checkpoint（非重入）的方式运行：前向丢弃块内算子保存的张量、保留块的输入；反向第一次需要这些张量时重算该块的前向。",
        trace_no_checkpoint: "Checkpointing: not recorded in this trace (trace again with --blocks CLASS,CLASS)"
            / "梯度检查点：此追踪未记录（用 --blocks CLASS,CLASS 重新追踪）",
        images: "Images per sample" / "每个样本的图像数",
        images_tip: "Images each sample carries (--images). The processor turns each into tokens of the language model's sequence (Qwen-VL: resized to multiples of 28 or 32 pixels, 2×2 patches a token; LLaVA: 576 a picture); the vision tower and projector are frozen."
            / "每个样本携带的图像数（--images）。处理器把每张图像变成语言模型序列中的 token（Qwen-VL：缩放到 28 或 32 像素的倍数，每 2×2 个图块一个 token；LLaVA：每张 576 个）；视觉塔和投影层冻结。",
        vlm_tokens: "{text} text + {images} image tokens = {seq}" / "{text} 个文本 token + {images} 个图像 token = {seq}",
        generate: "Generate (HF generate)" / "生成（HF generate）",
        generate_tip: "Off: one scoring forward over the sequence that keeps every position's logits. On: model.generate — the prompt's forward keeps only the last token's logits, then each new token appends its keys and values to the DynamicCache (--new-tokens)."
            / "关闭：对整条序列做一次打分前向，保留每个位置的 logits。开启：model.generate——prompt 的前向只保留最后一个 token 的 logits，之后每个新 token 把自己的键和值追加到 DynamicCache 中（--new-tokens）。",
        new_tokens: "New tokens" / "新 token 数",
        new_tokens_tip: "max_new_tokens: the cache ends with prompt + new - 1 tokens; sliding-window layers keep their window."
            / "max_new_tokens：缓存最终包含 prompt + new - 1 个 token；滑动窗口层只保留其窗口内的部分。",
        attention: "Attention" / "注意力",
        attention_tip: "Eager keeps the b·a·s² score matrices; SDPA/flash kernels keep only q, k, v, the output and a logsumexp."
            / "Eager 保留 b·a·s² 的分数矩阵；SDPA/flash 内核只保留 q、k、v、输出和一个 logsumexp。",
        checkpoint: "Checkpointing" / "梯度检查点",
        checkpoint_tip: "Recompute activations in backward instead of keeping them: checkpointed blocks keep only their input."
            / "在反向传播中重算激活值，而不是一直保留：设了检查点的块只保留其输入。",
        ckpt_none: "none" / "无",
        ckpt_full: "every block" / "每个块",
        ckpt_every: "every K-th block" / "每 K 个块",
        ckpt_segments: "N segments" / "N 段",
        ckpt_selective: "selective (attention)" / "选择性（注意力）",
        every_k: "K" / "K",
        segments_n: "Segments" / "段数",
        lora: "LoRA adapters" / "LoRA 适配器",
        lora_tip: "Freeze the base and train small rank-r adapters: gradients and optimizer states shrink to the adapters, frozen Linears keep no inputs."
            / "冻结基座模型，只训练秩为 r 的小型适配器：梯度和优化器状态缩减到仅针对适配器，冻结的 Linear 层不保留输入。",
        lora_rank: "Rank" / "秩",
        base_quant: "Base weights" / "基座权重",
        base_quant_nf4: "NF4 (double quant)" / "NF4（双重量化）",
        base_quant_int8: "int8 (LLM.int8)" / "int8（LLM.int8）",
        base_quant_tip: "Quantize the frozen base (QLoRA) or the inference weights with bitsandbytes at load: NF4 is 4 bits a weight plus its absmax (8-bit with double quantization, else fp32 per 64), int8 is LLM.int8(). Each 4-bit matmul over several rows dequantizes its weight for the moment it runs."
            / "加载时用 bitsandbytes 量化冻结的基座（QLoRA）或推理权重：NF4 每个权重 4 位，另加其 absmax（双重量化时为 8 位，否则每 64 个权重一个 fp32）；int8 即 LLM.int8()。每个 4 位矩阵乘在处理多行时，会在运行的那一刻把权重反量化。",
        base_quant_none: "as the precision" / "与精度相同",
        bnb: "Quantized by" / "量化方式",
        bnb_tip: "Who turned the weights into 4 bits. bitsandbytes 0.43 or later (transformers): from the weight's own dtype, the LM head left unquantized. bitsandbytes before 0.43: from fp16, so under bf16 every 4-bit matmul holds the fp16 weight and its bf16 cast. Lightning's plugin (litgpt --quantize bnb.*): from fp16 whatever the release, and the LM head is 4-bit too (its matmul keeps the final norm's output)."
            / "由谁把权重量化成 4 位。bitsandbytes 0.43 及以后（transformers）：从权重自身的数据类型量化，输出头不量化。bitsandbytes 0.43 之前：从 fp16 量化，因此在 bf16 下每个 4 位矩阵乘都会同时保留 fp16 权重及其 bf16 副本。Lightning 插件（litgpt --quantize bnb.*）：无论哪个版本都从 fp16 量化，而且输出头也是 4 位（它的矩阵乘会保留最终归一化层的输出）。",
        bnb_current: "bitsandbytes ≥ 0.43" / "bitsandbytes ≥ 0.43",
        bnb_before_0_43: "bitsandbytes < 0.43" / "bitsandbytes < 0.43",
        bnb_lightning: "Lightning (litgpt)" / "Lightning（litgpt）",
        gpus: "GPUs (data parallel)" / "GPU 数（数据并行）",
        gpus_tip: "GPUs that each run the same micro-batch. Alone this changes nothing per GPU; with ZeRO the model states are split across them."
            / "各自运行同样微批次的 GPU 数。单独调整时每个 GPU 的显存不变；配合 ZeRO 时，模型状态会在这些 GPU 之间切分。",
        zero: "ZeRO stage" / "ZeRO 阶段",
        zero_tip: "0: full replica per GPU (DDP buckets add a gradient copy). 1: optimizer states split. 2: + gradients split. 3: + parameters split."
            / "0：每个 GPU 保存完整副本（DDP 的梯度桶会额外多一份梯度）。1：切分优化器状态。2：再切分梯度。3：再切分参数。",
        sharding: "Sharding" / "切分方式",
        sharding_tip: "DeepSpeed ZeRO (the stage below), or PyTorch FSDP: full_shard splits parameters, gradients and optimizer states like ZeRO-3; shard_grad_op keeps whole parameters like ZeRO-2; hybrid_shard shards within a node and replicates across nodes."
            / "DeepSpeed ZeRO（见下方阶段），或 PyTorch FSDP：full_shard 像 ZeRO-3 一样切分参数、梯度和优化器状态；shard_grad_op 像 ZeRO-2 一样保留完整参数；hybrid_shard 在节点内切分、跨节点复制。",
        sharding_zero: "DeepSpeed ZeRO" / "DeepSpeed ZeRO",
        fsdp_impl: "FSDP code" / "FSDP 实现",
        fsdp_impl_tip: "fsdp1: FullyShardedDataParallel as accelerate and the HF Trainer run it — the root unit (embeddings, head) stays gathered through the step, and while gradients accumulate no_sync keeps every unit's full gradient. fsdp1-shared: LoRA adapters inside each block's flat parameter (Lightning, litgpt): the frozen weights get gradients too. fsdp2: fully_shard as torchtune runs it, gradients reduced every micro-batch."
            / "fsdp1：accelerate 和 HF Trainer 使用的 FullyShardedDataParallel——根单元（嵌入层、输出头）在整个步骤中保持聚合状态；梯度累积期间 no_sync 会保留每个单元的完整梯度。fsdp1-shared：LoRA 适配器位于每个块的扁平参数内（Lightning、litgpt）：冻结的权重也会得到梯度。fsdp2：torchtune 使用的 fully_shard，每个微批次都归约梯度。",
        parallel_note: "in the job (data × tensor × pipeline); numbers are for the most loaded GPU."
            / "参与作业（数据 × 张量 × 流水线）；数值针对负载最重的 GPU。",
        tp: "Tensor parallel" / "张量并行",
        tp_tip: "Split every weight matrix across GPUs (Megatron column/row): weights, and activations inside attention and the MLP, divide by this; norms and the residual stream stay whole unless sequence parallelism is on."
            / "将每个权重矩阵切分到多个 GPU 上（Megatron 的列/行切分）：权重以及注意力和 MLP 内部的激活值都除以该值；除非开启序列并行，归一化层和残差流保持完整。",
        sp: "Sequence parallel" / "序列并行",
        sp_tip: "With tensor parallelism, also split the residual stream, norms and dropout masks along the sequence (Korthikanti et al. 2022)."
            / "在张量并行的基础上，把残差流、归一化层和 dropout 掩码也沿序列维度切分（Korthikanti 等，2022）。",
        pp: "Pipeline stages" / "流水线阶段数",
        pp_tip: "Split the blocks into stages on different GPUs. The first stage keeps activations of several micro-batches at once (1F1B), and holds the embeddings; the last holds the LM head and loss."
            / "把模型的块划分为多个阶段，放在不同的 GPU 上。第一个阶段需要同时保留多个微批次的激活值（1F1B），并持有嵌入层；最后一个阶段持有 LM head 和损失。",
        gpu: "GPU" / "GPU",
        gpu_tip: "The card's memory is the capacity line; the largest micro-batch is searched against it."
            / "显卡的显存即容量线；按此搜索可容纳的最大微批次。",
        fits: "fits" / "放得下",
        /// "fits, {gib} free": the verdict with what is left, in the language's word order.
        fits_free: "fits, {gib} free" / "放得下，剩余 {gib}",
        /// "does NOT fit, {gib} short".
        short_by: "does NOT fit, {gib} short" / "放不下，还差 {gib}",
        /// "peak at {what}".
        peak_at_tpl: "peak at {what}" / "峰值出现在{what}",
        does_not_fit: "does NOT fit" / "放不下",
        free: "free" / "空闲",
        short: "short" / "缺口",
        no_free_block: "below the card in total, but the allocator finds no free block for one request (fragmentation)"
            / "总量低于显卡容量，但分配器找不到能满足某次申请的空闲块（碎片化）",
        of: "of" / "/",
        peak_at: "peak at" / "峰值出现在",
        max_batch: "Largest micro-batch that fits" / "可容纳的最大微批次",
        max_batch_none: "Even micro-batch 1 does not fit" / "即使微批次为 1 也无法容纳",
        /// `{n}`: the longest sequence that fits at the micro-batch `{b}`.
        max_seq_tpl: "longest sequence that fits at micro-batch {b}: {n}" / "微批次 {b} 下可容纳的最长序列：{n}",
        max_seq_none: "not even a 1-token sequence fits" / "连长度为 1 的序列也放不下",
        max_text_tpl: "most text tokens that fit beside {images} image tokens at micro-batch {b}: {n}" / "微批次 {b} 下，除 {images} 个图像 token 外最多可容纳的文本 token：{n}",
        max_text_none: "not even 1 text token fits beside the images" / "除图像外连 1 个文本 token 也放不下",
        max_image_tpl: "largest square image that fits at micro-batch {b}: {n}×{n} px" / "微批次 {b} 下可容纳的最大方形图像：{n}×{n} 像素",
        max_image_none: "not even the smallest image fits" / "连最小的图像也放不下",
        /// After the largest micro-batch when the current, larger one fits: `{next}` is the batch
        /// after the largest, which the allocator replay cannot place.
        max_batch_above_tpl: "(with every smaller one; micro-batch {next} finds no free block in the allocator replay, this one does)"
            / "（更小的微批次也都放得下；微批次 {next} 在分配器重放中找不到空闲块，当前这个可以）",
        why_title: "Why this much?" / "为什么需要这么多？",
        why_hint: "Hover a bar segment or a row for the formula with your numbers."
            / "鼠标悬停在柱状图分段或表格行上，可查看代入当前数值的公式。",
        at_the_peak: "at the peak" / "（峰值时）",
        capacity: "CUDA-visible" / "CUDA 可见",
        capacity_line: "{gpu} CUDA-visible: {gib}" / "{gpu} CUDA 可见：{gib}",
        capacity_tip: "{gib}: the memory CUDA can use (torch.cuda.mem_get_info's total), which every verdict is against; nvidia-smi shows the card as {smi}."
            / "{gib}：CUDA 可用的显存（torch.cuda.mem_get_info 的总量），所有结论都以它为准；nvidia-smi 显示这张卡为 {smi}。",
        capacity_above: "{gpu} CUDA-visible {gib} is above this axis (scaled to the bars)"
            / "{gpu} CUDA 可见 {gib} 在坐标轴之上（坐标按柱高缩放）",
        tab_batch: "vs micro-batch" / "随微批次",
        tab_seq: "vs sequence" / "随序列长度",
        tab_image: "vs image size" / "随图像尺寸",
        tab_segments: "vs checkpoint segments" / "随检查点段数",
        tab_gpus: "vs GPUs" / "随 GPU 数",
        axis_batch: "micro-batch" / "微批次",
        axis_seq: "sequence length" / "序列长度",
        axis_image: "image side (px)" / "图像边长（像素）",
        axis_text: "text tokens (beside the images)" / "文本 token 数（图像之外）",
        axis_segments: "checkpoint segments" / "检查点段数",
        axis_gpus: "GPUs" / "GPU 数",
        tab_compare: "Compare" / "对比",
        curve_hint: "Click the curve to set that value. Dashed: the GPU's capacity. Every point is what `vramscope estimate` prints at that value (the allocator replayed on this card); past the card, what the job needs."
            / "点击曲线可将参数设为该值。虚线：GPU 的容量。每个点都是 `vramscope estimate` 在该取值下给出的结果（在这张卡上重放了分配器）；超过容量的点是任务所需的量。",
        largest_fit: "largest that fits" / "可容纳的最大值",
        fewest_gpus: "fewest GPUs that fit" / "可容纳的最少 GPU 数",
        lowest_peak: "lowest peak" / "最低峰值",
        current: "current" / "当前",
        pin: "Pin as" / "固定为",
        pin_tip: "Keep the current scenario to compare against while you change things."
            / "保留当前场景，以便在修改设置时与之对比。",
        unpin_all: "Clear pins" / "清除固定",
        compare_empty: "Pin the current scenario (button above), change something, and compare here."
            / "先固定当前场景（上方按钮），再修改设置，然后在这里对比。",
        component: "Component" / "组成项",
        difference: "Difference" / "差值",
        undo: "Undo" / "撤销",
        redo: "Redo" / "重做",
        ready: "Ready." / "就绪。",
        dialog_unavailable: "No file dialog available (needs an xdg portal or zenity): type a path in the field under the model instead."
            / "没有可用的文件对话框（需要 xdg portal 或 zenity）：请在模型下方的输入框中直接输入路径。",
        restored_defaults: "The saved state could not be read; defaults restored."
            / "无法读取已保存的状态；已恢复默认设置。",
        activations_detail: "Activations by kind" / "激活值（按类型）",
        c_parameters: "parameters" / "参数",
        c_gradients: "gradients" / "梯度",
        c_optimizer: "optimizer states" / "优化器状态",
        c_activations: "activations" / "激活值",
        c_kv: "KV cache" / "KV 缓存",
        c_zero_buckets: "ZeRO buckets" / "ZeRO 通信桶",
        c_temporaries: "temporaries at peak" / "峰值时的临时张量",
        c_overhead: "CUDA context + allocator" / "CUDA 上下文 + 分配器",
        c_cache: "allocator cache" / "分配器缓存",
        c_cache_reserved: "reserved at most (max_memory_reserved):" / "最大预留（max_memory_reserved）：",
        c_cache_tip: "PyTorch's caching allocator keeps freed blocks for reuse instead of returning them to the driver. Replaying the step's allocations through a model of it gives what nvidia-smi shows beyond the allocated peak (fragmentation included)."
            / "PyTorch 的缓存分配器会保留已释放的块以便复用，而不是归还给驱动。用该分配器的模型重放这一步的所有分配，即可得到 nvidia-smi 显示的、超出已分配峰值的部分（含碎片）。",
        tl_reserved: "reserved (caching allocator)" / "已预留（缓存分配器）",
        gib_note: "Memory in GiB (2³⁰ bytes); exact bytes in tooltips."
            / "显存单位为 GiB（2³⁰ 字节）；精确字节数见悬停提示。",
        unvalidated: "UNVALIDATED architecture" / "未经验证的架构",
        ops_title: "Which op keeps what (one block)" / "各算子保留了什么（单个块）",
        ops_hint: "Bytes each op's backward keeps that no earlier op kept, per block, on one GPU."
            / "每个算子为反向传播保留、且之前的算子尚未保留的字节数，按单个块、单个 GPU 计。",
        ops_layers: "layers" / "层",
        facts_title: "Where the model's facts come from" / "模型各项数据的来源",
        facts_hint: "Each fact the estimate uses, and where it was read: the config.json's own keys, transformers' class defaults for keys it leaves out, vramscope's defaults where neither says, the weights' safetensors header (the truth for the parameters)."
            / "估算用到的每项数据及其读取来源：config.json 自身的键、其未写明的键所用的 transformers 类默认值、两者都没有时 vramscope 的默认值、权重的 safetensors 文件头（参数量以它为准）。",
        facts_header: "safetensors header" / "safetensors 文件头",
        facts_family: "family's tensor list over config.json" / "按 config.json 的模型族张量表",
        facts_class_default: "transformers class default" / "transformers 类默认值",
        facts_vramscope_default: "vramscope default" / "vramscope 默认值",
        ops_sliding: "sliding window" / "滑动窗口",
        ops_dense: "dense MLP" / "稠密 MLP",
        ops_no_rope: "no rotary" / "无 RoPE",
        ops_conv: "short convolution" / "短卷积",
        ops_ssm: "state-space / linear-attention mixer" / "状态空间/线性注意力混合器",
        ops_mamba: "Mamba mixer" / "Mamba 混合器",
        ops_no_mlp: "no MLP" / "无 MLP",
        ops_no_mixer: "MLP only" / "仅 MLP",
        unvalidated_tip: "This model type has no family of its own: it is estimated as the closest Llama-style decoder. Parameters follow the config (exact with a model.safetensors beside it); activations are an approximation."
            / "该模型类型没有专门的模型族：按最接近的 Llama 式解码器估算。参数量依据配置（旁边有 model.safetensors 时为精确值）；激活值为近似值。",
        tab_live: "Live GPU" / "实时 GPU",
        tab_options: "Options & cost" / "方案与成本",
        tab_timeline: "Timeline" / "时间线",
        tl_hint: "One steady-state step: forward op by op, backward block by block, optimizer step. Hover names the op; click shows that moment in \"Why this much?\"."
            / "一个稳态步：前向逐个算子，反向逐个块，然后是优化器更新步。悬停显示算子名称；点击可在“为什么需要这么多？”中查看该时刻。",
        tl_measured: "measured" / "实测",
        tl_snapshot: "Measured snapshot:" / "实测快照：",
        tl_open_snapshot: "Open snapshot" / "打开快照",
        tl_snapshot_tip: "A torch.cuda.memory._dump_snapshot() pickle (with _record_memory_history): its last steady step is drawn over the prediction, aligned at the step (and at forward/backward/optimizer when annotated). Two can be open to compare."
            / "torch.cuda.memory._dump_snapshot() 生成的 pickle（需开启 _record_memory_history）：将其最后一个稳定的步叠加在预测上，按步对齐（有标注时还按前向/反向/优化器对齐）。可同时打开两个进行对比。",
        tl_clear_snapshots: "Clear" / "清除",
        tl_reading: "reading" / "正在读取",
        tl_measured_peak: "measured step peak" / "实测步峰值",
        tl_vs_predicted: "vs predicted" / "对比预测",
        tl_none: "No timeline for this scenario." / "该场景没有时间线。",
        tl_peak: "peak" / "峰值",
        tl_x_axis: "event (tick: block)" / "事件（刻度：块）",
        tl_alive: "allocated" / "已分配",
        tl_usable: "CUDA-visible less CUDA context and NCCL" / "CUDA 可见减去 CUDA 上下文和 NCCL",
        tl_usable_above: "{gpu}: {gib} (CUDA-visible less context and NCCL) is above this axis (scaled to the step)"
            / "{gpu}：{gib}（CUDA 可见减去上下文和 NCCL）在坐标轴之上（坐标按本步缩放）",
        tl_selected: "selected" / "选中",
        tl_allocates: "allocates" / "分配",
        tl_frees: "frees" / "释放",
        tl_of: "of" / "的",
        tl_forward: "forward" / "前向",
        tl_backward: "backward" / "反向",
        tl_step: "optimizer step" / "优化器更新步",
        why_at: "At" / "时刻",
        why_back: "Back to the peak" / "返回峰值",
        seg_backward: "forward/backward peak + overhead" / "前向/反向峰值 + 开销",
        total_per_gpu: "total per GPU" / "每 GPU 总量",
        seg_step: "optimizer-step peak + overhead" / "优化器更新步峰值 + 开销",
        seg_naive: "naive: activations × 1/segments" / "朴素估计：激活值 × 1/段数",
        seg_sets_backward: "The forward/backward peak sets the total here." / "此处总量由前向/反向峰值决定。",
        seg_sets_step: "The optimizer step sets the total here: more segments cannot lower it."
            / "此处总量由优化器更新步决定：增加段数也无法降低。",
        options_intro: "Other hardware for this scenario at the same global batch: speed-up is the current step time over theirs; prices are the cheapest on-demand ones in presets/clouds.ron."
            / "在相同全局批次下，本场景在其他硬件上的情况：加速比为当前步时间与其步时间之比；价格取 presets/clouds.ron 中最便宜的按需价格。",
        live_start: "Start monitoring" / "开始监控",
        live_start_tip: "Sample the GPUs through NVML (the NVIDIA driver) every 250 ms and draw what they really hold against the prediction."
            / "每 250 ms 通过 NVML（NVIDIA 驱动）对 GPU 采样一次，并将实际占用与预测对照绘制。",
        live_stop: "Stop" / "停止",
        live_pause: "Pause" / "暂停",
        live_resume: "Resume" / "继续",
        live_gpu: "GPU" / "GPU",
        live_record: "Record to CSV" / "记录到 CSV",
        live_record_tip: "Write the samples as t_s,gpu,used_bytes,total_bytes (vramscope diagnose --trace reads it)."
            / "以 t_s,gpu,used_bytes,total_bytes 格式写出样本（vramscope diagnose --trace 可读取）。",
        live_measured: "measured used" / "实测已用",
        live_predicted: "predicted total" / "预测总量",
        live_process: "process" / "进程",
        live_memory: "memory" / "显存",
        live_verdict: "Curve" / "曲线",
        live_evidence: "evidence" / "证据",
        live_interval: "Interval" / "间隔",
        live_interval_tip: "Time between NVML samples (the history keeps the last 2,400)."
            / "两次 NVML 采样之间的时间（历史记录保留最近 2,400 个样本）。",
        live_whole_gpu: "whole GPU" / "整块 GPU",
        oom_ranked: "For the current scenario, each fix alone would save:"
            / "对于当前场景，单独应用每项修复可节省：",
        oom_title: "Explain an out-of-memory message" / "解读显存不足（OOM）报错",
        oom_hint: "Paste PyTorch's or TensorFlow's OOM error here"
            / "在此粘贴 PyTorch 或 TensorFlow 的 OOM 报错",
        measured_on_bar: "measured" / "实测",
        /// "{model}", "{gpu}" (the card, "× n" for a job of n GPUs).
        model_on_gpu: "{model} on {gpu}" / "{model}，运行于 {gpu}",
    }
}

/// The GUI's texts in the current language.
pub fn tr() -> &'static Strings {
    match lang::current() {
        Lang::En => &EN,
        Lang::ZhCn => &ZH,
    }
}
